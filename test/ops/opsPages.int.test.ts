import nock from 'nock';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import type { NavigationRecord } from '../../src/flow/navigationRecord.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import { digestOf, randomToken } from '../../src/shared/tokens.js';
import {
  consentAndAuthorize,
  elicitConnection,
  openConnectLink,
  retryConnection,
  type Elicited,
} from '../support/connectFlow.js';
import { mintAccessToken, reportsAt, reportsTokenEndpoint, tokenResponse } from '../support/forgedTokens.js';
import { tokenFor } from '../support/mcpWire.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestBrowser, type BrowserResponse, type TestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The operator pages (dashboard, flows, recovery, approvals) over real HTTPS, with real
// OIDC sign-in at the development identity provider: `ops` has the operator
// role, alice does not. Real MRTR flows of a high-risk tool (held for
// approval) run beside seeded flows of every lineage. The steps share one
// stack and run in order.

const HOUR = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms);

describe('operator pages', () => {
  const { stack } = useBrokerStack({ highRiskTools: ['reports_create'], retryWaitMs: 300 });
  let ops: TestBrowser;
  let aliceWeb: TestBrowser;
  /** Every page the operator's browser received (redirects included), for the canary check. */
  const opsPages: string[] = [];
  const canaries: Record<string, string> = {};
  // Seeded flows: one per lineage and purpose.
  const nestedBob = navigationFixture('OUT_OF_BAND_PENDING', {
    lineage: 'nested',
    subject: { iss: 'https://idp.test', sub: 'bob' },
  });
  const expiredCarol = navigationFixture('EXPIRED', {
    lineage: 'error_retry',
    subject: { iss: 'https://idp.test', sub: 'carol' },
    createdAt: ago(2 * HOUR),
    expiresAt: ago(HOUR),
    updatedAt: ago(HOUR),
  });
  const openDave = navigationFixture('USER_REVIEW', { subject: { iss: 'https://idp.test', sub: 'dave' } });
  const stuckErin = navigationFixture('NAVIGATION_ACCEPTED', {
    subject: { iss: 'https://idp.test', sub: 'erin' },
    createdAt: ago(HOUR),
    expiresAt: ago(HOUR / 6),
    updatedAt: ago(HOUR / 2),
  });
  // alice's real flow, filled in by the steps that drive it.
  const alice: { token: string; navigationId: string; elicited: Elicited; args: { title: string; body: string } } = {
    token: '',
    navigationId: '',
    elicited: { requestState: '', url: '', message: '' },
    args: { title: 'Ops canary report', body: 'Held for approval.' },
  };
  const ALICE_AT_REPORTS = 'rs-user-alice';

  async function signIn(login: string, fetch: Fetch): Promise<TestBrowser> {
    const browser = createTestBrowser({ fetch });
    const form = await browser.get(`${stack.brokerUrl}/login?return_to=/`);
    const home = await browser.submitForm(form, { login, password: DEV_PASSWORD });
    expect(home.text).toContain('Signed in as');
    return browser;
  }
  const url = (path: string) => `${stack.brokerUrl}${path}`;
  const statusOf = async (id: string) =>
    (await stack.db.pool.query('SELECT status FROM elicitation_navigations WHERE id = $1', [id])).rows[0]
      ?.status as string;
  const eventsOf = async (id: string) =>
    (
      await stack.db.pool.query(
        'SELECT event, actor, from_status, to_status, evidence FROM navigation_events WHERE navigation_id = $1 ORDER BY flow_seq',
        [id],
      )
    ).rows as {
      event: string;
      actor: string;
      from_status: string;
      to_status: string;
      evidence: Record<string, unknown>;
    }[];
  const navigationOf = async (elicited: Elicited) =>
    (
      await stack.db.pool.query('SELECT id FROM elicitation_navigations WHERE handle_digest = $1', [
        digestOf(new URL(elicited.url).pathname.split('/').pop()!),
      ])
    ).rows[0].id as string;

  beforeAll(async () => {
    const recording: Fetch = async (input, init) => {
      const response = await stack.fetch(input, init);
      opsPages.push(await response.clone().text());
      return response;
    };
    ops = await signIn('ops', recording);
    aliceWeb = await signIn('alice', stack.fetch);
    for (const n of [nestedBob, expiredCarol, openDave, stuckErin])
      await insertNavigation(stack.db.pool, n as NavigationRecord);
  });
  afterEach(() => {
    nock.cleanAll();
  });

  it('sends a signed-out browser to sign in, and refuses its POSTs', async () => {
    const browser = createTestBrowser({ fetch: stack.fetch });
    const page = await browser.get(url('/ops/flows?state=EXPIRED'), { followRedirects: false });
    expect(page.status).toBe(303);
    expect(page.location).toBe(url(`/login?return_to=${encodeURIComponent('/ops/flows?state=EXPIRED')}`));
    const post = await browser.post(
      url(`/ops/flows/${openDave.id}/close`),
      { _csrf: 'x', reason: 'no session' },
      { origin: stack.brokerUrl },
    );
    expect(post.status).toBe(403);
    expect(await statusOf(openDave.id)).toBe('USER_REVIEW');
  });

  it('refuses alice (no operator role) on every operator route, GET and POST, and records each refusal', async () => {
    const gets = ['/ops', '/ops/flows', `/ops/flows/${openDave.id}`, '/ops/stuck', '/ops/reconcile', '/ops/approvals'];
    const posts = [
      `/ops/flows/${openDave.id}/close`,
      `/ops/flows/${expiredCarol.id}/reissue`,
      `/ops/flows/${openDave.id}/redrive`,
      `/ops/approvals/${openDave.id}/approve`,
      `/ops/approvals/${openDave.id}/reject`,
      '/ops/connections/pause',
      '/ops/connections/resume',
    ];
    for (const path of gets) expect((await aliceWeb.get(url(path))).status, path).toBe(403);
    for (const path of posts)
      expect(
        (await aliceWeb.post(url(path), { reason: 'I am not an operator' }, { origin: stack.brokerUrl })).status,
        path,
      ).toBe(403);
    // Counted, a row per subject and minute (test/ops/refusalFlood.int.test.ts): each names the first it counts.
    const refused = await stack.db.pool.query<{ method: string; path: string; refusals: number }>(
      `SELECT details->>'method' AS method, details->>'path' AS path, refusals FROM operator_actions WHERE action = 'access_refused' AND actor = 'web:alice' ORDER BY id`,
    );
    expect(refused.rows.reduce((sum, r) => sum + r.refusals, 0)).toBe(gets.length + posts.length);
    expect(refused.rows.length).toBeLessThanOrEqual(2);
    expect(`${refused.rows[0]!.method} ${refused.rows[0]!.path}`).toBe(`GET ${gets[0]}`);
    expect(await statusOf(openDave.id)).toBe('USER_REVIEW');
    expect(await statusOf(expiredCarol.id)).toBe('EXPIRED');
    expect(
      (await stack.db.pool.query(`SELECT 1 FROM operator_actions WHERE action <> 'access_refused'`)).rowCount,
    ).toBe(0);
  });

  it('runs a real MRTR flow of a high-risk tool up to the approval queue (alice, canary tokens)', async () => {
    alice.token = await tokenFor(stack, 'alice');
    alice.elicited = await elicitConnection(stack, alice.token, 'reports_create', alice.args);
    alice.navigationId = await navigationOf(alice.elicited);
    const browser = createTestBrowser({ fetch: stack.fetch, stopAt: (u) => u.pathname === '/oauth/callback/reports' });
    const stopped = await consentAndAuthorize(
      stack,
      await openConnectLink(stack, alice.elicited.url, 'alice', browser),
      'alice',
    );
    const jti = `CANARY-ACCESS-${randomToken()}`;
    const refreshToken = `CANARY-REFRESH-${randomToken()}`;
    const accessToken = await mintAccessToken(stack, { sub: ALICE_AT_REPORTS, jti });
    const [, payload, signature] = accessToken.split('.') as [string, string, string];
    Object.assign(canaries, {
      jti,
      refreshToken,
      accessToken,
      'access token payload': payload,
      'access token signature': signature,
    });
    const [{ nonce }] = (
      await stack.db.pool.query('SELECT nonce FROM oauth_transactions WHERE navigation_id = $1', [alice.navigationId])
    ).rows;
    reportsTokenEndpoint(stack).reply(
      200,
      await tokenResponse(stack, { sub: ALICE_AT_REPORTS, nonce, accessToken, refreshToken }),
    );
    expect((await browser.get(stopped.location!)).text).toContain('Report Service is connected');

    const held = await retryConnection(
      stack,
      alice.token,
      'reports_create',
      alice.args,
      alice.elicited.requestState,
      'accept',
    );
    expect(held.json.result).toMatchObject({ resultType: 'input_required' });
    expect(await statusOf(alice.navigationId)).toBe('REQUIREMENT_VERIFIED');
    expect(
      (
        await stack.db.pool.query(`SELECT status FROM operation_approvals WHERE navigation_id = $1`, [
          alice.navigationId,
        ])
      ).rows,
    ).toEqual([{ status: 'pending' }]);
  });

  it('shows the dashboard: gates, three SVG charts, counts, under the strict CSP', async () => {
    const page = await ops.get(url('/ops'));
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'none'");
    expect(csp).toContain("style-src 'self'");
    expect(page.text).not.toMatch(/<script\b|\sstyle=/i);
    expect(page.text.match(/<svg\b/g)).toHaveLength(3);
    // The ledger's gates; the tokens-outside-the-vault gate is judged only when tokens are given (the CLI's --tokens-file).
    expect(page.text.match(/<tr class="gate" data-gate="/g)).toHaveLength(6);
    expect(page.text).toContain('data-gate="accepted_more_than_once"');
    expect(page.text).not.toContain('data-gate="tokens_outside_vault"');
    expect(page.text).toMatch(/<span class="verdict (pass|miss)">(PASS|MISS)<\/span>/);
    expect(page.text).toContain('<strong>5</strong> flows');
    expect(page.text).toContain('over the newest 1 verification ');
    // The flows-by-state chart has a bar per state with its count; the per-day chart counts today's five.
    expect(page.text).toContain('<title>REQUIREMENT_VERIFIED: 1</title>');
    expect(page.text).toContain('<title>EXPIRED: 1</title>');
    expect(page.text).toContain('The last 30 days (UTC): 5 flows.');
    expect(page.text).toContain('<strong>1</strong> waiting for approval');
    expect(page.text).not.toContain('New connections are paused');
  });

  it('lists flows with filters by state, lineage and subject, and refuses bad filters', async () => {
    const ids = (page: BrowserResponse) =>
      [...page.text.matchAll(/href="\/ops\/flows\/([0-9a-f-]{36})"/g)].map((m) => m[1]).sort();
    const all = await ops.get(url('/ops/flows'));
    expect(ids(all)).toEqual([nestedBob.id, expiredCarol.id, openDave.id, stuckErin.id, alice.navigationId].sort());
    const expired = await ops.submitForm(all, { state: 'EXPIRED' }, { form: '/ops/flows' });
    expect(expired.url).toContain('state=EXPIRED');
    expect(ids(expired)).toEqual([expiredCarol.id]);
    expect(expired.text).toContain('<option value="EXPIRED" selected>');
    expect(ids(await ops.get(url('/ops/flows?lineage=nested')))).toEqual([nestedBob.id]);
    expect(ids(await ops.get(url('/ops/flows?lineage=error_retry&state=')))).toEqual([expiredCarol.id]);
    expect(ids(await ops.get(url('/ops/flows?subject=alice')))).toEqual([alice.navigationId]);
    expect(ids(await ops.get(url('/ops/flows?age=30m')))).toEqual([expiredCarol.id, stuckErin.id].sort());
    for (const bad of [
      'state=NOPE',
      'lineage=legacy',
      'limit=501',
      'age=soon',
      'extra=1',
      'state=EXPIRED&state=CREATED',
    ]) {
      expect((await ops.get(url(`/ops/flows?${bad}`))).status, bad).toBe(400);
    }
    const stuck = await ops.get(url('/ops/stuck'));
    expect(ids(stuck)).toEqual([stuckErin.id]);
    expect((await ops.get(url('/ops/reconcile'))).status).toBe(200);
    expect((await ops.get(url('/ops/flows/not-a-uuid'))).status).toBe(400);
    expect((await ops.get(url('/ops/flows/00000000-0000-4000-8000-000000000000'))).status).toBe(404);
  });

  it('answers 400 naming the bound, not 500, for an age filter older than the database can count', async () => {
    for (const age of ['999999d', '3651d', '2147483648']) {
      const page = await ops.get(url(`/ops/flows?age=${age}`));
      expect(page.status, age).toBe(400);
      expect(page.text, age).toContain('up to 3650d');
    }
    expect((await ops.get(url('/ops/flows?age=3650d'))).status).toBe(200);
  });

  it('approves alice’s held operation from the queue; a lost answer is then re-driven from the flow page, once', async () => {
    const [{ id: approvalId }] = (
      await stack.db.pool.query('SELECT id FROM operation_approvals WHERE navigation_id = $1', [alice.navigationId])
    ).rows;
    const queue = await ops.get(url('/ops/approvals?status=pending'));
    expect(queue.text).toContain(`/ops/flows/${alice.navigationId}`);
    const approved = await ops.submitForm(
      queue,
      { reason: 'checked with alice by phone' },
      { form: `/ops/approvals/${approvalId}/approve` },
    );
    expect(approved.redirects).toEqual([url(`/ops/approvals/${approvalId}/approve`)]);
    expect(approved.url).toBe(url(`/ops/flows/${alice.navigationId}?done=approved`));
    expect(approved.text).toContain('Approved: the next retry');
    expect(approved.text).toContain('checked with alice by phone');

    // The Report Service fails once: the operation is accepted, its outcome unknown.
    const api = new URL(stack.dev.reports.apiUrl);
    const failing = nock(api.origin, { allowUnmocked: true }).post(`${api.pathname}/reports`).reply(503);
    const lost = await retryConnection(
      stack,
      alice.token,
      'reports_create',
      alice.args,
      alice.elicited.requestState,
      'accept',
    );
    expect(failing.isDone()).toBe(true);
    expect(lost.json.error ?? lost.json.result?.['isError']).toBeTruthy();
    expect(
      (
        await stack.db.pool.query('SELECT outcome_status FROM operation_receipts WHERE navigation_id = $1', [
          alice.navigationId,
        ])
      ).rows,
    ).toEqual([{ outcome_status: 'pending' }]);

    const detail = await ops.get(url(`/ops/flows/${alice.navigationId}`));
    expect(detail.text).toContain('<span class="outcome outcome-pending">pending</span>');
    expect(detail.text).not.toContain('/close"'); // accepted: nothing to close or re-issue
    expect(detail.text).not.toContain('/reissue"');
    const redriven = await ops.submitForm(detail, { reason: 'provider outage is over' }, { form: '/redrive' });
    expect(redriven.url).toBe(url(`/ops/flows/${alice.navigationId}?done=redriven`));
    expect(redriven.text).toContain('<span class="outcome outcome-succeeded">succeeded</span>');
    expect(redriven.text).not.toContain('/redrive"');
    expect((await reportsAt(stack, ALICE_AT_REPORTS)).filter((r) => r.title === alice.args.title)).toHaveLength(1);
    const events = await eventsOf(alice.navigationId);
    expect(events.map((e) => e.event)).toEqual(
      expect.arrayContaining([
        'approval_requested',
        'operator_approved',
        'mrtr_accept',
        'operator_redrive',
        'outcome_redriven',
      ]),
    );
    expect(events.find((e) => e.event === 'operator_redrive')).toMatchObject({
      actor: 'operator:ops',
      evidence: { reason: 'provider outage is over' },
    });

    // The host's next retry answers the recorded outcome: still one report.
    const done = await retryConnection(
      stack,
      alice.token,
      'reports_create',
      alice.args,
      alice.elicited.requestState,
      'accept',
    );
    expect(done.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    expect((await reportsAt(stack, ALICE_AT_REPORTS)).filter((r) => r.title === alice.args.title)).toHaveLength(1);
  });

  it('shows a flow with its event timeline, consent receipt and outcome, and never a token', async () => {
    const detail = await ops.get(url(`/ops/flows/${alice.navigationId}`));
    expect(detail.status).toBe(200);
    for (const event of [
      'present',
      'browser_consent',
      'callback_verified',
      'operator_approved',
      'mrtr_accept',
      'outcome_redriven',
    ])
      expect(detail.text).toContain(`<strong class="event">${event}</strong>`);
    expect(detail.text).toContain('by <code>operator:ops</code>');
    expect(detail.text).toContain('Destination shown');
    expect(detail.text).toContain('<span class="approval approval-approved">approved</span>');
    expect(Object.keys(canaries)).toHaveLength(5);
    for (const path of ['/ops', '/ops/flows', '/ops/stuck', '/ops/reconcile', '/ops/approvals?status=approved'])
      expect((await ops.get(url(path))).status, path).toBe(200);
    const leaks = opsPages.flatMap((text, i) =>
      Object.entries(canaries)
        .filter(([, value]) => text.includes(value))
        .map(([name]) => `${name} in page #${i}`),
    );
    expect(opsPages.length).toBeGreaterThan(15);
    expect(leaks).toEqual([]);
    expect(opsPages.join('\n')).not.toMatch(/eyJ[\w-]+\.eyJ/);
  });

  it('marks an open flow terminal with a reason; without a reason or with a bad CSRF token nothing changes', async () => {
    const detail = await ops.get(url(`/ops/flows/${openDave.id}`));
    expect(detail.text).toContain(`action="/ops/flows/${openDave.id}/close"`);
    expect(detail.text).not.toContain('/reissue"'); // open and not yet expired
    for (const reason of ['', '  ', 'no'])
      expect((await ops.submitForm(detail, { reason }, { form: '/close' })).status, `reason "${reason}"`).toBe(400);
    expect(
      (await ops.submitForm(detail, { _csrf: 'forged', reason: 'a good reason' }, { form: '/close' })).status,
    ).toBe(403);
    expect(
      (
        await ops.submitForm(
          detail,
          { reason: 'a good reason' },
          { form: '/close', headers: { origin: 'https://evil.example' } },
        )
      ).status,
    ).toBe(403);
    expect(
      (
        await ops.post(
          url(`/ops/flows/${openDave.id}/close`),
          { reason: 'no token at all' },
          { origin: stack.brokerUrl },
        )
      ).status,
    ).toBe(403);
    expect(await statusOf(openDave.id)).toBe('USER_REVIEW');
    expect(await eventsOf(openDave.id)).toEqual([]);

    const closed = await ops.submitForm(detail, { reason: 'user gave up, confirmed by ticket 42' }, { form: '/close' });
    expect(closed.redirects).toEqual([url(`/ops/flows/${openDave.id}/close`)]);
    expect(closed.url).toBe(url(`/ops/flows/${openDave.id}?done=closed`));
    expect(closed.text).toContain('The flow was marked terminal.');
    expect(await statusOf(openDave.id)).toBe('EXPIRED');
    expect(await eventsOf(openDave.id)).toEqual([
      {
        event: 'operator_close',
        actor: 'operator:ops',
        from_status: 'USER_REVIEW',
        to_status: 'EXPIRED',
        evidence: { reason: 'user gave up, confirmed by ticket 42' },
      },
    ]);
    const actions = await stack.db.pool.query(
      `SELECT reason, actor FROM operator_actions WHERE action = 'mark_terminal'`,
    );
    expect(actions.rows).toEqual([{ reason: 'user gave up, confirmed by ticket 42', actor: 'operator:ops' }]);
    // Marking it again is refused (409) and changes nothing.
    expect(
      (
        await ops.post(
          url(`/ops/flows/${openDave.id}/close`),
          { _csrf: ops.forms(detail)[0]!.fields.find((f) => f.name === '_csrf')!.value, reason: 'again' },
          { origin: stack.brokerUrl },
        )
      ).status,
    ).toBe(409);
    expect(await eventsOf(openDave.id)).toHaveLength(1);
  });

  it('re-issues the link of an expired flow in the same lineage and shows the new connect link once', async () => {
    const detail = await ops.get(url(`/ops/flows/${expiredCarol.id}`));
    expect(detail.text).not.toContain('/close"');
    expect((await ops.submitForm(detail, { reason: '' }, { form: '/reissue' })).status).toBe(400);
    const reissued = await ops.submitForm(detail, { reason: 'carol asked for a new link' }, { form: '/reissue' });
    expect(reissued.status).toBe(200);
    const link = new RegExp(`${stack.brokerUrl}/connect/[\\w-]{43}`).exec(reissued.text)?.[0];
    expect(link).toBeDefined();
    const successor = await stack.db.pool.query(
      'SELECT id, status, lineage, subject_sub, handle_digest FROM elicitation_navigations WHERE reissued_from = $1',
      [expiredCarol.id],
    );
    expect(successor.rows).toEqual([
      expect.objectContaining({ status: 'USER_REVIEW', lineage: 'error_retry', subject_sub: 'carol' }),
    ]);
    expect(successor.rows[0].handle_digest.equals(digestOf(link!.split('/').pop()!))).toBe(true);
    expect((await eventsOf(expiredCarol.id)).map((e) => [e.event, e.actor])).toEqual([
      ['operator_reissued', 'operator:ops'],
    ]);

    const after = await ops.get(url(`/ops/flows/${expiredCarol.id}`));
    expect(after.text).toContain(`/ops/flows/${successor.rows[0].id}`);
    expect(after.text).not.toContain('/reissue"');
    expect(after.text).not.toContain(link);
    expect((await ops.get(url(`/ops/flows/${successor.rows[0].id}`))).text).toContain('Re-issued from');
    // A second re-issue of the same flow is refused.
    expect((await ops.submitForm(detail, { reason: 'once more please' }, { form: '/reissue' })).status).toBe(409);
  });

  it('rejects bob’s held operation from the queue: the flow ends and the retry is told', async () => {
    const bob = await tokenFor(stack, 'bob');
    const args = { title: 'Risky report', body: 'Should not happen.' };
    const elicited = await elicitConnection(stack, bob, 'reports_create', args);
    const navigationId = await navigationOf(elicited);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'bob'), 'bob');
    expect(
      (await retryConnection(stack, bob, 'reports_create', args, elicited.requestState, 'accept')).json.result,
    ).toMatchObject({ resultType: 'input_required' });

    const queue = await ops.get(url('/ops/approvals'));
    const [{ id: approvalId }] = (
      await stack.db.pool.query('SELECT id FROM operation_approvals WHERE navigation_id = $1', [navigationId])
    ).rows;
    expect((await ops.submitForm(queue, { reason: 'x' }, { form: `/ops/approvals/${approvalId}/reject` })).status).toBe(
      400,
    );
    const rejected = await ops.submitForm(
      queue,
      { reason: 'not allowed for this account' },
      { form: `/ops/approvals/${approvalId}/reject` },
    );
    expect(rejected.url).toBe(url(`/ops/flows/${navigationId}?done=rejected`));
    expect(rejected.text).toContain('<span class="approval approval-rejected">rejected</span>');
    expect(await statusOf(navigationId)).toBe('OPERATION_REJECTED');
    expect((await eventsOf(navigationId)).find((e) => e.event === 'operator_reject')).toMatchObject({
      actor: 'operator:ops',
      to_status: 'OPERATION_REJECTED',
    });
    // Decided once: a second decision is refused.
    expect(
      (await ops.submitForm(queue, { reason: 'changed my mind' }, { form: `/ops/approvals/${approvalId}/approve` }))
        .status,
    ).toBe(409);
    const told = await retryConnection(stack, bob, 'reports_create', args, elicited.requestState, 'accept');
    expect(told.json.result).toMatchObject({ isError: true, structuredContent: { status: 'rejected' } });
  });

  it('pauses and resumes new connections from the dashboard, with a reason', async () => {
    const dashboard = await ops.get(url('/ops'));
    const paused = await ops.submitForm(
      dashboard,
      { reason: 'provider incident 7' },
      { form: '/ops/connections/pause' },
    );
    expect(paused.url).toBe(url('/ops'));
    expect(paused.text).toContain('New connections are paused');
    expect(paused.text).toContain('provider incident 7');
    const resumed = await ops.submitForm(paused, { reason: 'incident over' }, { form: '/ops/connections/resume' });
    expect(resumed.text).not.toContain('New connections are paused');
    const actions = await stack.db.pool.query(
      `SELECT action, reason, actor FROM operator_actions WHERE action LIKE '%_connections' ORDER BY id`,
    );
    expect(actions.rows).toEqual([
      { action: 'pause_connections', reason: 'provider incident 7', actor: 'operator:ops' },
      { action: 'resume_connections', reason: 'incident over', actor: 'operator:ops' },
    ]);
  });
});
