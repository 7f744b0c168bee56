import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../../src/auth/sessionCookie.js';
import { acceptOriginalOperation } from '../../src/broker/acceptOriginalOperation.js';
import type { BrokerDeps } from '../../src/broker/brokerDeps.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { ConflictError } from '../../src/errors/appError.js';
import { lineages } from '../../src/flow/navigationStates.js';
import { findReconcileFindings } from '../../src/ledger/ledgerQueriesRepo.js';
import { systemClock } from '../../src/shared/clock.js';
import { csrfTokenFor } from '../../src/web/middleware/csrf.js';
import type { BrokerStack } from '../support/brokerStack.js';
import {
  consentAndAuthorize,
  elicitConnection,
  openConnectLink,
  retryConnection,
  URL_CAPS,
} from '../support/connectFlow.js';
import { killStoredToken, secretsBox } from '../support/deadToken.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import { createTestBrowser, type BrowserResponse, type TestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// "Your connections" over HTTP, as a browser without script uses it: the signed-in user's own
// connections and nothing else; a connection the provider stopped accepting is shown as needing a
// reconnect, and reconnecting goes through the same consent page, callback and vault as a tool's flow.

/** A new browser signed in to the broker as `login`, landed on its connections page. */
async function signedIn(stack: BrokerStack, login: string): Promise<{ browser: TestBrowser; page: BrowserResponse }> {
  const browser = createTestBrowser({ fetch: stack.fetch });
  const form = await browser.get(`${stack.brokerUrl}/login?return_to=/connections`);
  const page = await browser.submitForm(form, { login, password: DEV_PASSWORD });
  expect(page.url).toBe(`${stack.brokerUrl}/connections`);
  return { browser, page };
}

const csrfOf = (stack: BrokerStack, browser: TestBrowser) =>
  csrfTokenFor(browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === SESSION_COOKIE)!.value);

/** The broker's calls to the Report Service's revocation endpoint, noted; `down` makes them fail as an unreachable provider does. */
function revocationTap() {
  const tap = { sent: [] as string[], down: false, wrap: (fetch: Fetch): Fetch => fetch };
  tap.wrap = (fetch) => async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.endsWith('/token/revocation')) {
      tap.sent.push(new URLSearchParams(String(init?.body ?? '')).get('token_type_hint') ?? '');
      if (tap.down) throw new TypeError('fetch failed');
    }
    return fetch(input, init);
  };
  return tap;
}

describe('GET /connections, its reconnect and its disconnect', () => {
  const revocations = revocationTap();
  const { stack, tokens } = useBrokerStack({ brokerFetch: revocations.wrap }, { users: ['alice', 'bob'] });
  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const connectionOf = async (login: string) =>
    (
      await query(
        "SELECT id, state, upstream_subject, granted_scopes, connected_at FROM connections WHERE subject_sub = $1 AND provider = 'reports'",
        [login],
      )
    )[0] as { id: string; state: string; upstream_subject: string; granted_scopes: string[]; connected_at: Date };
  const connect = async (login: 'alice' | 'bob') => {
    const args = { title: `Setup ${login}`, body: 'connect once' };
    const elicited = await elicitConnection(stack, tokens[login], 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, login), login);
    const done = await retryConnection(stack, tokens[login], 'reports_create', args, elicited.requestState, 'accept');
    expect(done.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
  };
  const storedTokens = async (login: string) => {
    const rows = await query(
      'SELECT subject_iss, connection_id, kind, ciphertext, key_id FROM secrets WHERE subject_sub = $1',
      [login],
    );
    const box = secretsBox(stack);
    return rows.map((r) =>
      box.open(
        { ciphertext: r.ciphertext, keyId: r.key_id },
        `${r.subject_iss}\n${login}\nreports\n${r.kind}\n${r.connection_id}`,
      ),
    );
  };
  const flows = () =>
    query('SELECT id, lineage, tool, client_id, status FROM elicitation_navigations ORDER BY created_at');
  // What the tool call made the connection need: alice's flow waiting for her, and its requestState.
  let waiting: { requestState: string; args: { title: string; body: string } };

  it('sends a browser that is not signed in to sign in, showing nothing', async () => {
    await connect('alice');
    await connect('bob');
    const page = await createTestBrowser({ fetch: stack.fetch }).get(`${stack.brokerUrl}/connections`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Sign in to see your connections');
    expect(page.text).toContain('href="/login?return_to=%2Fconnections"');
    expect(page.text).not.toContain((await connectionOf('alice')).id);
  });

  it("lists only the signed-in user's own connections: provider, account, scopes, state, dates; no token", async () => {
    const alice = await connectionOf('alice');
    const bob = await connectionOf('bob');
    const { page } = await signedIn(stack, 'alice');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h1>Your connections</h1>');
    expect(page.text).toContain(`id="connection-${alice.id}"`);
    expect(page.text).not.toContain(bob.id);
    expect(page.text).not.toContain(bob.upstream_subject);
    expect(page.text).toContain('<h2>Report Service</h2>');
    expect(page.text).toContain(`<dt>Account</dt><dd>${alice.upstream_subject}</dd>`);
    for (const scope of alice.granted_scopes) expect(page.text).toContain(`<code>${scope}</code>`);
    expect(page.text).toContain('<dd class="connection-state">Connected</dd>');
    expect(page.text).toContain(`<time datetime="${alice.connected_at.toISOString()}">`);
    // The setup call used it.
    expect(page.text).not.toMatch(/<dt>Last used<\/dt><dd>never/);
    expect(page.text).not.toContain('/reconnect');
    for (const token of await storedTokens('alice'))
      expect(page.text.includes(token), 'a token on the page').toBe(false);
    expect(page.text).not.toMatch(/eyJ[\w-]+\.eyJ/);

    const home = await signedIn(stack, 'bob').then(({ browser }) => browser.get(`${stack.brokerUrl}/`));
    expect(home.text).toContain('<a href="/connections">Your connections</a>');
  });

  it('shows a connection the provider stopped accepting as needing a reconnect, with its reconnect action', async () => {
    await killStoredToken(stack, 'alice');
    waiting = { args: { title: 'After the reconnect', body: 'done once' }, requestState: '' };
    const asked = await callTool(stack, tokens.alice, 'reports_create', waiting.args, {}, URL_CAPS);
    expect(asked.json.result).toMatchObject({ resultType: 'input_required' });
    waiting.requestState = (asked.json.result as { requestState: string }).requestState;
    expect((await connectionOf('alice')).state).toBe('needs_reauth');

    const { browser, page } = await signedIn(stack, 'alice');
    const alice = await connectionOf('alice');
    expect(page.text).toContain('class="connection state-needs_reauth"');
    expect(page.text).toContain('<dd class="connection-state">Needs reconnecting</dd>');
    expect(page.text).toContain('<strong>Needs reconnecting.</strong> Report Service no longer accepts');
    const forms = browser.forms(page);
    expect(forms.map((f) => [f.method, f.action, f.buttons.map((b) => b.text)])).toEqual([
      ['POST', `${stack.brokerUrl}/connections/${alice.id}/reconnect`, ['Reconnect Report Service']],
      ['POST', `${stack.brokerUrl}/connections/${alice.id}/disconnect`, ['Disconnect Report Service']],
      ['POST', `${stack.brokerUrl}/connections/add`, ['Add another Report Service account']],
    ]);
    // bob's works: nothing to reconnect, only to disconnect (or to add another account).
    const bobs = await signedIn(stack, 'bob');
    expect(bobs.browser.forms(bobs.page).map((f) => f.action)).toEqual([
      `${stack.brokerUrl}/connections/${(await connectionOf('bob')).id}/disconnect`,
      `${stack.brokerUrl}/connections/add`,
    ]);
  });

  it('refuses a reconnect without the CSRF token, from another origin, or for another user’s connection, and starts no flow', async () => {
    const alice = await connectionOf('alice');
    const bob = await connectionOf('bob');
    const before = await flows();
    const { browser } = await signedIn(stack, 'alice');
    const url = `${stack.brokerUrl}/connections/${alice.id}/reconnect`;
    const origin = stack.brokerUrl;
    const csrf = csrfOf(stack, browser);

    expect((await browser.post(url, {}, { origin })).status).toBe(400);
    const forged = await browser.post(url, { _csrf: csrfTokenFor('another-session-cookie-value') }, { origin });
    expect(forged.status).toBe(403);
    expect(forged.text).toContain('This form has expired');
    const crossSite = await browser.post(url, { _csrf: csrf }, { origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    // bob's connection, from alice's session with her valid token, is as unknown as none.
    const notHers = await browser.post(
      `${stack.brokerUrl}/connections/${bob.id}/reconnect`,
      { _csrf: csrf },
      { origin },
    );
    expect(notHers.status).toBe(404);
    const unknown = await browser.post(
      `${stack.brokerUrl}/connections/${randomUUID()}/reconnect`,
      { _csrf: csrf },
      {
        origin,
      },
    );
    expect(unknown.status).toBe(404);
    // Signed out: back to the page (which asks to sign in), nothing done.
    const anonymous = await createTestBrowser({ fetch: stack.fetch }).post(
      url,
      { _csrf: csrf },
      {
        origin,
        followRedirects: false,
      },
    );
    expect([anonymous.status, anonymous.location]).toEqual([303, `${stack.brokerUrl}/connections`]);
    // bob's own connection works: nothing to reconnect (409).
    const bobs = await signedIn(stack, 'bob');
    const working = await bobs.browser.post(
      `${stack.brokerUrl}/connections/${bob.id}/reconnect`,
      { _csrf: csrfOf(stack, bobs.browser) },
      { origin },
    );
    expect(working.status).toBe(409);
    expect(working.text).toContain('there is nothing to reconnect');

    expect(await flows()).toEqual(before);
    expect((await connectionOf('alice')).state).toBe('needs_reauth');
  });

  it('refuses another account at the provider: the reconnect is for the account the connection holds, and nothing changes', async () => {
    const before = await connectionOf('alice');
    const { browser, page } = await signedIn(stack, 'alice');
    const review = await browser.submitForm(page, {}, { form: '/reconnect' });
    expect(review.url).toMatch(new RegExp(`^${stack.brokerUrl}/connect/[A-Za-z0-9_-]{43}$`));
    expect(review.text).toContain('<h1>Reconnect Report Service?</h1>');
    expect(review.text).toContain(
      `You asked to reconnect your Report Service account <strong>${before.upstream_subject}</strong>`,
    );
    expect(review.text).not.toContain('An app you use asked');

    const refused = await consentAndAuthorize(stack, { browser, review }, 'bob');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain(`but your Report Service connection is ${before.upstream_subject}`);
    expect(refused.text).toContain('reconnect from your connections page and sign in');
    expect(await connectionOf('alice')).toEqual(before);
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'alice'")).toEqual([]);
    const reconnect = (await flows()).filter((f) => f.lineage === 'reconnect');
    expect(reconnect).toEqual([
      { id: expect.any(String), lineage: 'reconnect', tool: '', client_id: null, status: 'OUT_OF_BAND_PENDING' },
    ]);
    expect(
      await query("SELECT evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'account_mismatch'", [
        reconnect[0]!.id,
      ]),
    ).toEqual([
      { evidence: { connectionId: before.id, connectedAs: before.upstream_subject, signedInAs: 'rs-user-bob' } },
    ]);
  });

  it('reconnects as the same account through the same flow: the connection keeps its id, and the waiting call is done once', async () => {
    const before = await connectionOf('alice');
    const { browser, page } = await signedIn(stack, 'alice');
    const [reconnectFlow] = (await flows()).filter((f) => f.lineage === 'reconnect');
    // The reconnect flow still open from the refused attempt: the same link again, no second flow.
    const review = await browser.submitForm(page, {}, { form: '/reconnect' });
    expect(review.text).toContain('<h1>Reconnect Report Service?</h1>');
    expect((await flows()).filter((f) => f.lineage === 'reconnect')).toHaveLength(1);

    const done = await consentAndAuthorize(stack, { browser, review }, 'alice');
    expect(done.url).toBe(`${stack.brokerUrl}/connect/done?n=${reconnectFlow!.id}`);
    expect(done.text).toContain('<h1>Report Service is connected again</h1>');
    expect(done.text).toContain('<a href="/connections">Back to your connections</a>');
    const after = await connectionOf('alice');
    expect(after).toMatchObject({ id: before.id, state: 'active', upstream_subject: before.upstream_subject });
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'alice' ORDER BY kind")).not.toEqual([]);

    const listed = await browser.get(`${stack.brokerUrl}/connections`);
    expect(listed.text).toContain('<dd class="connection-state">Connected</dd>');
    expect(listed.text).not.toContain('/reconnect');

    // The reconnect verified its own flow and settled the tool's: that one is accepted once, through its lineage.
    const receipts = await query(
      'SELECT n.lineage, r.outcome_status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id',
    );
    const created = await retryConnection(
      stack,
      tokens.alice,
      'reports_create',
      waiting.args,
      waiting.requestState,
      'accept',
    );
    expect(created.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    const receiptsAfter = await query(
      'SELECT n.lineage, r.outcome_status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id',
    );
    expect(receiptsAfter).toEqual([...receipts, { lineage: 'mrtr', outcome_status: 'succeeded' }]);
    expect(receiptsAfter.some((r) => r.lineage === 'reconnect')).toBe(false);
    expect((await flows()).find((f) => f.id === reconnectFlow!.id)?.status).toBe('REQUIREMENT_VERIFIED');
    // Where a reconnect flow ends: the operators' reconcile finds nothing there to accept.
    const findings = await findReconcileFindings(stack.db.pool, new Date(Date.now() + 60_000), 0);
    expect(findings.filter((f) => f.id === reconnectFlow!.id)).toEqual([]);
    expect(internalErrors(stack)).toEqual([]);
  });

  it('never accepts a tool operation on a reconnect flow: not through acceptOriginalOperation, not in SQL', async () => {
    const [reconnectFlow] = (await flows()).filter((f) => f.lineage === 'reconnect');
    const [flow] = await query('SELECT subject_iss, request_digest FROM elicitation_navigations WHERE id = $1', [
      reconnectFlow!.id,
    ]);
    // acceptOriginalOperation reads only these before it decides; the cast leaves out what it never reaches.
    const deps = { pool: stack.db.pool, clock: systemClock, box: secretsBox(stack), highRiskTools: new Set() };
    for (const lineage of lineages) {
      const accepting = acceptOriginalOperation(deps as unknown as BrokerDeps, {
        navigationId: reconnectFlow!.id,
        principal: { iss: flow!.subject_iss, sub: 'alice' },
        tool: '',
        requestDigest: flow!.request_digest,
        lineage,
        arguments: {},
        clientId: undefined,
      });
      await expect(accepting).rejects.toBeInstanceOf(ConflictError);
      await expect(accepting).rejects.toThrow(`belongs to the reconnect lineage, not ${lineage}`);
    }
    expect(await query('SELECT id FROM operation_receipts WHERE navigation_id = $1', [reconnectFlow!.id])).toEqual([]);
    // Written by hand, a receipt naming the reconnect flow is refused by the schema itself.
    await expect(
      stack.db.pool.query(
        `INSERT INTO operation_receipts (id, operation_key, navigation_id, lineage, requirement_receipt, outcome_status, created_at)
         VALUES ($1, $2, $3, 'mrtr', 'r', 'pending', now())`,
        [randomUUID(), `key-${randomUUID()}`, reconnectFlow!.id],
      ),
    ).rejects.toMatchObject({ code: '23503', constraint: 'operation_receipts_flow_lineage_fkey' });
    await expect(
      stack.db.pool.query("UPDATE elicitation_navigations SET tool = 'reports_create' WHERE id = $1", [
        reconnectFlow!.id,
      ]),
    ).rejects.toMatchObject({ code: '23514', constraint: 'elicitation_navigations_reconnect_no_operation' });
  });

  it('refuses a disconnect without the CSRF token, from another origin, or for another user’s connection, and changes nothing', async () => {
    const alice = await connectionOf('alice');
    const bob = await connectionOf('bob');
    const held = await query('SELECT subject_sub, kind FROM secrets ORDER BY subject_sub, kind');
    const { browser } = await signedIn(stack, 'alice');
    const url = `${stack.brokerUrl}/connections/${alice.id}/disconnect`;
    const origin = stack.brokerUrl;
    const csrf = csrfOf(stack, browser);

    expect((await browser.post(url, {}, { origin })).status).toBe(400);
    expect((await browser.post(url, { _csrf: csrfTokenFor('another-session-cookie-value') }, { origin })).status).toBe(
      403,
    );
    expect((await browser.post(url, { _csrf: csrf }, { origin: 'https://evil.example' })).status).toBe(403);
    const notHers = await browser.post(
      `${stack.brokerUrl}/connections/${bob.id}/disconnect`,
      { _csrf: csrf },
      { origin },
    );
    expect(notHers.status).toBe(404);
    const anonymous = await createTestBrowser({ fetch: stack.fetch }).post(
      url,
      { _csrf: csrf },
      {
        origin,
        followRedirects: false,
      },
    );
    expect([anonymous.status, anonymous.location]).toEqual([303, `${stack.brokerUrl}/connections`]);

    expect(revocations.sent).toEqual([]);
    expect(await query('SELECT subject_sub, kind FROM secrets ORDER BY subject_sub, kind')).toEqual(held);
    expect([(await connectionOf('alice')).state, (await connectionOf('bob')).state]).toEqual(['active', 'active']);
  });

  it('disconnects: revoked at the provider, tokens deleted, recorded, and the page says the provider revoked it', async () => {
    const alice = await connectionOf('alice');
    const held = await storedTokens('alice');
    const { browser, page } = await signedIn(stack, 'alice');
    const done = await browser.submitForm(page, {}, { form: '/disconnect' });
    expect(done.status).toBe(200);
    expect(done.text).toContain('<h1>Report Service is disconnected</h1>');
    expect(done.text).toContain('and Report Service revoked it too');
    for (const token of held) expect(done.text.includes(token), 'a token on the page').toBe(false);
    // The refresh token, which ends the whole grant (RFC 7009 §2.1), once.
    expect(revocations.sent).toEqual(['refresh_token']);
    expect((await connectionOf('alice')).state).toBe('revoked');
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'alice'")).toEqual([]);
    expect(
      await query(
        "SELECT e.actor, e.evidence FROM navigation_events e JOIN connections c ON c.navigation_id = e.navigation_id WHERE c.id = $1 AND e.event = 'connection_revoked'",
        [alice.id],
      ),
    ).toEqual([
      {
        actor: 'browser:alice',
        evidence: {
          connectionId: alice.id,
          provider: 'reports',
          reason: 'disconnected by the user on the connections page',
          atProvider: 'revoked',
          token: 'refresh_token',
        },
      },
    ]);

    const listed = await browser.get(`${stack.brokerUrl}/connections`);
    expect(listed.text).toContain('class="connection state-revoked"');
    expect(listed.text).toContain('<dd class="connection-state">Disconnected</dd>');
    // Not a dead end: connect it again, or add another account.
    expect(browser.forms(listed).map((f) => [f.action, f.buttons.map((b) => b.text)])).toEqual([
      [`${stack.brokerUrl}/connections/${alice.id}/reconnect`, ['Connect Report Service again']],
      [`${stack.brokerUrl}/connections/add`, ['Add another Report Service account']],
    ]);
    // A second submit of the same form: already disconnected, nothing sent again.
    const again = await browser.post(
      `${stack.brokerUrl}/connections/${alice.id}/disconnect`,
      {
        _csrf: csrfOf(stack, browser),
      },
      { origin: stack.brokerUrl },
    );
    expect(again.status).toBe(409);
    expect(revocations.sent).toEqual(['refresh_token']);
    const asked = await callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS);
    expect(asked.json.result).toMatchObject({ resultType: 'input_required' });
  });

  it('disconnects with the provider unreachable: the tokens are deleted all the same and the page says it was not revoked there', async () => {
    revocations.down = true;
    try {
      const bob = await connectionOf('bob');
      const { browser, page } = await signedIn(stack, 'bob');
      const done = await browser.submitForm(page, {}, { form: '/disconnect' });
      expect(done.status).toBe(200);
      expect(done.text).toContain('<strong>not revoked at the provider (could not be reached)</strong>');
      expect(done.text).toContain("remove the broker's access in your Report Service account settings");
      expect(revocations.sent).toEqual(['refresh_token', 'refresh_token']);
      expect((await connectionOf('bob')).state).toBe('revoked');
      expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'bob'")).toEqual([]);
      expect(
        (
          await query(
            "SELECT e.evidence FROM navigation_events e JOIN connections c ON c.navigation_id = e.navigation_id WHERE c.id = $1 AND e.event = 'connection_revoked'",
            [bob.id],
          )
        ).map((r) => r.evidence.atProvider),
      ).toEqual(['failed']);
    } finally {
      revocations.down = false;
    }
    expect(internalErrors(stack)).toEqual([]);
  });

  it('connects a disconnected connection again from the page: the same connection, active, and calls use it without asking', async () => {
    const before = await connectionOf('alice');
    expect(before.state).toBe('revoked');
    const { browser, page } = await signedIn(stack, 'alice');
    const review = await browser.submitForm(page, {}, { form: `/connections/${before.id}/reconnect` });
    expect(review.text).toContain('<h1>Reconnect Report Service?</h1>');
    const done = await consentAndAuthorize(stack, { browser, review }, 'alice');
    expect(done.text).toContain('<h1>Report Service is connected again</h1>');
    expect(await connectionOf('alice')).toMatchObject({
      id: before.id,
      state: 'active',
      upstream_subject: before.upstream_subject,
    });
    expect(await storedTokens('alice')).not.toEqual([]);
    const listed = await browser.get(`${stack.brokerUrl}/connections`);
    expect(listed.text).toContain('<dd class="connection-state">Connected</dd>');
    expect(listed.text).not.toContain('/reconnect');
    // Connected again: a call runs at once, with no link.
    const listedReports = await callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS);
    expect(listedReports.json.result).toMatchObject({ resultType: 'complete' });
    expect(internalErrors(stack)).toEqual([]);
  });
});
