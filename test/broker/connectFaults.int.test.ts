import { afterEach, describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../../src/auth/sessionCookie.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { randomToken, digestOf } from '../../src/shared/tokens.js';
import { csrfTokenFor } from '../../src/web/middleware/csrf.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { reportsAt } from '../support/forgedTokens.js';
import { createTestBrowser, type TestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Browser-side faults of the connect flow: links and
// callbacks in the wrong hands, prefetches, replayed, tampered, early, late and
// duplicate callbacks, off-site return targets, a flow never completed, racing
// retries. Each checks the wire, the navigation row, the ledger, and that
// nothing was stored or accepted.

const RETRY_WAIT_MS = 200;
const NAVIGATION_TTL_SECONDS = 900; // the configuration's default

interface Flow {
  args: { title: string; body: string };
  url: string;
  requestState: string;
  id: string;
}

describe('connect flow faults in the browser', () => {
  let clockOffsetMs = 0;
  const clock = { now: () => new Date(Date.now() + clockOffsetMs) };
  const { stack, tokens } = useBrokerStack(
    { clock, retryWaitMs: RETRY_WAIT_MS, navigationTtlSeconds: NAVIGATION_TTL_SECONDS },
    { users: ['alice'] },
  );

  afterEach(async () => {
    clockOffsetMs = 0;
    // Each test connects alice from scratch.
    await stack.db.pool.query('DELETE FROM secrets');
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const navigation = async (flow: Flow) =>
    (await query('SELECT status, row_version, updated_at FROM elicitation_navigations WHERE id = $1', [flow.id]))[0];
  const events = async (flow: Flow) =>
    query(
      'SELECT event, actor, from_status, to_status, evidence FROM navigation_events WHERE navigation_id = $1 ORDER BY id',
      [flow.id],
    );
  const countOf = async (
    table: 'consent_receipts' | 'oauth_transactions' | 'operation_receipts' | 'secrets',
    flow: Flow,
  ) => (await query(`SELECT count(*)::int AS n FROM ${table} WHERE navigation_id = $1`, [flow.id]))[0].n as number;
  const storedSecrets = () => query('SELECT id, kind, row_version, ciphertext FROM secrets ORDER BY kind');
  const reportsTitled = async (title: string) =>
    (await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === title);

  async function elicit(title: string): Promise<Flow> {
    const args = { title, body: `${title}: body` };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const handle = new URL(elicited.url).pathname.split('/').pop()!;
    const [row] = await query('SELECT id FROM elicitation_navigations WHERE handle_digest = $1', [digestOf(handle)]);
    return { args, url: elicited.url, requestState: elicited.requestState, id: row.id };
  }

  /** alice consents and authorizes at the Report Service; her browser stops before delivering the callback. */
  async function authorizeUntilCallback(flow: Flow): Promise<{ browser: TestBrowser; callbackUrl: string }> {
    const browser = createTestBrowser({ fetch: stack.fetch, stopAt: (u) => u.pathname === '/oauth/callback/reports' });
    const stopped = await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice', browser), 'alice');
    expect(stopped.location).toMatch(new RegExp(`^${stack.brokerUrl}/oauth/callback/reports\\?`));
    return { browser, callbackUrl: stopped.location! };
  }

  /** A browser signed in to the broker as `login`, without any connect link. */
  async function signedIn(login: string): Promise<TestBrowser> {
    const browser = createTestBrowser({ fetch: stack.fetch });
    const home = await browser.submitForm(await browser.get(`${stack.brokerUrl}/login?return_to=/`), {
      login,
      password: DEV_PASSWORD,
    });
    expect(home.url).toBe(`${stack.brokerUrl}/`);
    return browser;
  }

  /** The host's state-only retry does not complete, and nothing was accepted or created. */
  async function expectNothingAccepted(flow: Flow): Promise<void> {
    const retry = await retryConnection(stack, tokens.alice, 'reports_create', flow.args, flow.requestState, undefined);
    expect(retry.json.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    expect(retry.json.result).not.toHaveProperty('inputRequests');
    expect(await countOf('operation_receipts', flow)).toBe(0);
    expect(await reportsTitled(flow.args.title)).toEqual([]);
  }

  it('refuses a connect link opened by another user, binds nothing, and leaves it usable by its owner', async () => {
    const flow = await elicit('Forwarded link');
    const before = await navigation(flow);
    const forwarded = await openConnectLink(stack, flow.url, 'mallory');
    expect(forwarded.review.status).toBe(403);
    expect(forwarded.review.text).toContain('This link belongs to someone else');
    expect(forwarded.browser.forms(forwarded.review).filter((f) => f.action.includes('/connect/'))).toEqual([]);

    expect(await navigation(flow)).toEqual(before);
    expect(await events(flow)).toContainEqual(
      expect.objectContaining({
        event: 'subject_mismatch',
        actor: 'browser:mallory',
        from_status: 'USER_REVIEW',
        to_status: 'USER_REVIEW',
        evidence: expect.objectContaining({ where: 'connect_page', browserSub: 'mallory' }),
      }),
    );
    expect([
      await countOf('consent_receipts', flow),
      await countOf('oauth_transactions', flow),
      await countOf('secrets', flow),
    ]).toEqual([0, 0, 0]);
    await expectNothingAccepted(flow);

    const done = await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice'), 'alice');
    expect(done.text).toContain('Report Service is connected');
    expect((await navigation(flow)).status).toBe('REQUIREMENT_VERIFIED');
  });

  it('refuses a consent POST on another user’s link even with a valid CSRF token of the poster', async () => {
    const flow = await elicit('Forwarded consent');
    const before = await navigation(flow);
    const mallory = await signedIn('mallory');
    const cookie = mallory.cookiesFor(stack.brokerUrl).find((c) => c.name === SESSION_COOKIE)!;
    const page = await mallory.post(
      new URL(new URL(flow.url).pathname, stack.brokerUrl).href,
      { _csrf: csrfTokenFor(cookie.value) },
      { origin: stack.brokerUrl, followRedirects: false },
    );

    expect(page.status).toBe(403);
    expect(page.location).toBeUndefined();
    expect(page.text).toContain('belongs to another user');
    expect(await navigation(flow)).toEqual(before);
    expect(await events(flow)).toContainEqual(
      expect.objectContaining({
        event: 'subject_mismatch',
        evidence: expect.objectContaining({ where: 'consent', browserSub: 'mallory' }),
      }),
    );
    expect([await countOf('consent_receipts', flow), await countOf('oauth_transactions', flow)]).toEqual([0, 0]);
  });

  it('refuses a callback delivered to another user’s browser and stores nothing', async () => {
    const flow = await elicit('Callback elsewhere');
    const { callbackUrl } = await authorizeUntilCallback(flow);
    const before = await navigation(flow);
    expect(before.status).toBe('OUT_OF_BAND_PENDING');

    const page = await (await signedIn('mallory')).get(callbackUrl);
    expect(page.status).toBe(403);
    expect(page.text).toContain('You are not the user who started this connection');
    expect(await navigation(flow)).toEqual(before);
    expect(await events(flow)).toContainEqual(
      expect.objectContaining({
        event: 'subject_mismatch',
        from_status: 'OUT_OF_BAND_PENDING',
        to_status: 'OUT_OF_BAND_PENDING',
        evidence: expect.objectContaining({ where: 'callback', browserSub: 'mallory' }),
      }),
    );
    expect(await storedSecrets()).toEqual([]);
    await expectNothingAccepted(flow);

    const done = await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice'), 'alice');
    expect(done.text).toContain('Report Service is connected');
  });

  it('refuses a callback that arrives after the navigation expired and accepts nothing', async () => {
    const flow = await elicit('Late callback');
    // alice consents a minute before the link expires; she finishes at the provider two minutes later,
    // when the navigation has expired but its OAuth transaction (10 minutes) has not.
    clockOffsetMs = (NAVIGATION_TTL_SECONDS - 60) * 1000;
    const { browser, callbackUrl } = await authorizeUntilCallback(flow);
    clockOffsetMs = (NAVIGATION_TTL_SECONDS + 60) * 1000;

    const page = await browser.get(callbackUrl);
    const retry = await retryConnection(stack, tokens.alice, 'reports_create', flow.args, flow.requestState, 'accept');
    expect({
      callbackRefused: page.status >= 400 && page.status < 500,
      navigationVerified: ['REQUIREMENT_VERIFIED', 'MRTR_RETRY_ACCEPTED'].includes((await navigation(flow)).status),
      secretsStored: (await storedSecrets()).length,
      retryResult: retry.json.result?.['resultType'],
      receipts: await countOf('operation_receipts', flow),
      reports: (await reportsTitled(flow.args.title)).length,
    }).toEqual({
      callbackRefused: true,
      navigationVerified: false,
      secretsStored: 0,
      retryResult: 'input_required',
      receipts: 0,
      reports: 0,
    });
  });

  it('lets the link be fetched many times, signed out and signed in, without changing the navigation', async () => {
    const flow = await elicit('Prefetched link');
    const before = await navigation(flow);
    const scanner = createTestBrowser({ fetch: stack.fetch });
    for (let i = 0; i < 3; i++) {
      const page = await scanner.get(flow.url);
      expect([page.status, page.text.includes('Sign in to connect')]).toEqual([200, true]);
    }
    const run = await openConnectLink(stack, flow.url, 'alice');
    for (let i = 0; i < 3; i++)
      expect((await run.browser.get(flow.url)).text).toContain(`Continue to ${stack.dev.reports.issuer}`);

    expect(await navigation(flow)).toEqual(before);
    expect((await events(flow)).map((e) => e.event)).toEqual(['created', 'present']);
    expect([await countOf('consent_receipts', flow), await countOf('oauth_transactions', flow)]).toEqual([0, 0]);

    expect((await consentAndAuthorize(stack, run, 'alice')).text).toContain('Report Service is connected');
    const accepted = await retryConnection(
      stack,
      tokens.alice,
      'reports_create',
      flow.args,
      flow.requestState,
      'accept',
    );
    expect(accepted.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: 'Prefetched link' } },
    });
  });

  it('rejects a second callback with the same state and changes nothing', async () => {
    const flow = await elicit('Replayed callback');
    const { browser, callbackUrl } = await authorizeUntilCallback(flow);
    expect((await browser.get(callbackUrl)).text).toContain('Report Service is connected');
    const [verified, secrets, ledger] = [await navigation(flow), await storedSecrets(), await events(flow)];
    expect(verified.status).toBe('REQUIREMENT_VERIFIED');

    const replay = await browser.get(callbackUrl);
    expect(replay.status).toBe(400);
    expect(replay.text).toContain('already used or is not known');
    expect(await navigation(flow)).toEqual(verified);
    expect(await storedSecrets()).toEqual(secrets);
    expect(await events(flow)).toEqual(ledger);
  });

  it('rejects a callback whose state was tampered with and burns nothing', async () => {
    const flow = await elicit('Tampered state');
    const { browser, callbackUrl } = await authorizeUntilCallback(flow);
    const before = [await navigation(flow), await events(flow)];
    const tampered = new URL(callbackUrl);
    const state = tampered.searchParams.get('state')!;
    tampered.searchParams.set('state', `${state.slice(0, -1)}${state.endsWith('A') ? 'B' : 'A'}`);

    const page = await browser.get(tampered.href);
    expect(page.status).toBe(400);
    expect(page.text).toContain('already used or is not known');
    expect([await navigation(flow), await events(flow)]).toEqual(before);
    expect(await countOf('oauth_transactions', flow)).toBe(1);
    expect(await storedSecrets()).toEqual([]);
    await expectNothingAccepted(flow);

    expect((await browser.get(callbackUrl)).text).toContain('Report Service is connected');
  });

  it('refuses a callback for a state that was never issued and advances nothing', async () => {
    const flow = await elicit('Early callback');
    const run = await openConnectLink(stack, flow.url, 'alice');
    const before = [await navigation(flow), await events(flow)];
    const forged = new URL('/oauth/callback/reports', stack.brokerUrl);
    forged.search = new URLSearchParams({
      code: randomToken(),
      state: randomToken(),
      iss: stack.dev.reports.issuer,
    }).toString();

    const page = await run.browser.get(forged.href);
    expect(page.status).toBe(400);
    expect(page.text).toContain('already used or is not known');
    expect([await navigation(flow), await events(flow)]).toEqual(before);
    expect(await storedSecrets()).toEqual([]);
    await expectNothingAccepted(flow);
  });

  it('refuses a duplicate of a successful callback after the operation was accepted and changes nothing', async () => {
    const flow = await elicit('Duplicate callback');
    const { browser, callbackUrl } = await authorizeUntilCallback(flow);
    expect((await browser.get(callbackUrl)).text).toContain('Report Service is connected');
    const accepted = await retryConnection(
      stack,
      tokens.alice,
      'reports_create',
      flow.args,
      flow.requestState,
      'accept',
    );
    expect(accepted.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    const before = [await navigation(flow), await events(flow), await storedSecrets()];
    expect(before[0]).toMatchObject({ status: 'MRTR_RETRY_ACCEPTED' });

    const duplicate = await browser.get(callbackUrl);
    expect(duplicate.status).toBe(400);
    expect([await navigation(flow), await events(flow), await storedSecrets()]).toEqual(before);
    expect(await countOf('operation_receipts', flow)).toBe(1);
    expect(await reportsTitled(flow.args.title)).toHaveLength(1);
  });

  it.each(['//evil.example/', 'https://evil.example', '/\\evil.example', '/\t/evil.example'])(
    'refuses to sign in with the off-site return target %s and changes nothing',
    async (target) => {
      const count = async () => (await query('SELECT (SELECT count(*) FROM web_sessions)::int AS s'))[0];
      const before = await count();
      const browser = createTestBrowser({ fetch: stack.fetch });
      const page = await browser.get(`${stack.brokerUrl}/login?return_to=${encodeURIComponent(target)}`, {
        followRedirects: false,
      });

      expect(page.status).toBe(400);
      expect(page.headers.get('location')).toBeNull();
      expect(browser.cookies()).toEqual([]);
      expect(await count()).toEqual(before);
    },
  );

  it('answers a state-only input_required after the bounded wait when the user accepted but never completed', async () => {
    const flow = await elicit('Accepted, never completed');
    const started = Date.now();
    const retry = await retryConnection(stack, tokens.alice, 'reports_create', flow.args, flow.requestState, 'accept');

    expect(Date.now() - started).toBeGreaterThanOrEqual(RETRY_WAIT_MS);
    expect(retry.json.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    expect(retry.json.result).not.toHaveProperty('inputRequests');
    expect(retry.json.result?.['requestState']).not.toBe(flow.requestState);
    expect((await navigation(flow)).status).toBe('NAVIGATION_ACCEPTED');
    expect((await events(flow)).map((e) => e.event)).toEqual(['created', 'present', 'host_accept']);
    expect([await countOf('consent_receipts', flow), await countOf('operation_receipts', flow)]).toEqual([0, 0]);
    expect(await storedSecrets()).toEqual([]);
    expect(await reportsTitled(flow.args.title)).toEqual([]);
  });

  it('gives a new connect link, and accepts nothing, when the navigation expired before the user completed it', async () => {
    const flow = await elicit('Expired before completion');
    const waiting = await retryConnection(
      stack,
      tokens.alice,
      'reports_create',
      flow.args,
      flow.requestState,
      'accept',
    );
    const requestState = waiting.json.result?.['requestState'] as string;
    clockOffsetMs = (NAVIGATION_TTL_SECONDS + 1) * 1000;

    const next = await retryConnection(stack, tokens.alice, 'reports_create', flow.args, requestState, undefined);
    const params = (
      next.json.result as { inputRequests?: { connect?: { method: string; params: { mode: string; url: string } } } }
    ).inputRequests?.connect;
    expect(next.json.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    expect(params).toMatchObject({ method: 'elicitation/create', params: { mode: 'url' } });
    expect(params!.params.url).not.toBe(flow.url);
    expect(new URL(params!.params.url).origin).toBe(stack.brokerUrl);

    expect((await navigation(flow)).status).toBe('EXPIRED');
    expect((await events(flow)).at(-1)).toMatchObject({
      event: 'expire',
      from_status: 'NAVIGATION_ACCEPTED',
      to_status: 'EXPIRED',
    });
    const newHandle = new URL(params!.params.url).pathname.split('/').pop()!;
    const [fresh] = await query(
      'SELECT id, status, subject_sub FROM elicitation_navigations WHERE handle_digest = $1',
      [digestOf(newHandle)],
    );
    expect(fresh).toMatchObject({ status: 'USER_REVIEW', subject_sub: 'alice' });
    expect(
      (
        await query('SELECT count(*)::int AS n FROM operation_receipts WHERE navigation_id = ANY($1)', [
          [flow.id, fresh.id],
        ])
      )[0].n,
    ).toBe(0);
    expect(await reportsTitled(flow.args.title)).toEqual([]);
    const old = await openConnectLink(stack, flow.url, 'alice');
    expect([old.review.status, old.review.text.includes('This link has expired')]).toEqual([410, true]);
  });

  it('accepts the operation exactly once when two instances race the same retry', async () => {
    const flow = await elicit('Raced retry');
    expect((await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice'), 'alice')).text).toContain(
      'Report Service is connected',
    );

    const answers = await Promise.all([
      retryConnection(stack, tokens.alice, 'reports_create', flow.args, flow.requestState, 'accept'),
      retryConnection(stack, tokens.alice, 'reports_create', flow.args, flow.requestState, 'accept', stack.secondUrl),
    ]);
    const ids = answers.map((a) => {
      expect(a.json.result).toMatchObject({
        resultType: 'complete',
        structuredContent: { status: 'created', report: { title: 'Raced retry' } },
      });
      return (a.json.result?.['structuredContent'] as { report: { id: string } }).report.id;
    });
    expect(ids[0]).toBe(ids[1]);
    expect(await query('SELECT outcome_status FROM operation_receipts WHERE navigation_id = $1', [flow.id])).toEqual([
      { outcome_status: 'succeeded' },
    ]);
    expect((await events(flow)).filter((e) => e.event === 'mrtr_accept')).toHaveLength(1);
    expect((await reportsTitled(flow.args.title)).map((r) => r.id)).toEqual([ids[0]]);
  });
});
