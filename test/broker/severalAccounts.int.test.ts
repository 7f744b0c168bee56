import type { ElicitRequestFormParams } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../../src/auth/sessionCookie.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { csrfTokenFor } from '../../src/web/middleware/csrf.js';
import type { BrokerStack } from '../support/brokerStack.js';
import {
  consentAndAuthorize,
  elicitConnection,
  openConnectLink,
  retryConnection,
  URL_CAPS,
} from '../support/connectFlow.js';
import { secretsBox } from '../support/deadToken.js';
import { closeLegacy, connectLegacy } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import { createTestBrowser, type BrowserResponse, type TestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Several accounts at one provider for one user: alice connects her Report Service accounts
// "alice" and "mallory" (rs-user-alice, rs-user-mallory). The Report Service keeps reports per
// account, so the account a report was created under is the token the provider saw.

const BOTH_CAPS = { elicitation: { url: {}, form: {} } };
const ALICE_RS = 'rs-user-alice';
const MALLORY_RS = 'rs-user-mallory';

interface Row {
  id: string;
  upstream_subject: string;
  preferred: boolean;
  preferred_chosen_at: Date | null;
  state: string;
}

async function signedIn(stack: BrokerStack, login: string): Promise<{ browser: TestBrowser; page: BrowserResponse }> {
  const browser = createTestBrowser({ fetch: stack.fetch });
  const form = await browser.get(`${stack.brokerUrl}/login?return_to=/connections`);
  const page = await browser.submitForm(form, { login, password: DEV_PASSWORD });
  expect(page.url).toBe(`${stack.brokerUrl}/connections`);
  return { browser, page };
}

describe('several accounts at one provider', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice', 'bob'] });
  const query = async <T = Record<string, unknown>>(sql: string, params: unknown[] = []) =>
    (await stack.db.pool.query(sql, params)).rows as T[];
  const connectionsOf = (login: string) =>
    query<Row>(
      "SELECT id, upstream_subject, preferred, preferred_chosen_at, state FROM connections WHERE subject_sub = $1 AND provider = 'reports' ORDER BY connected_at",
      [login],
    );
  const byAccount = async (login: string, account: string) =>
    (await connectionsOf(login)).find((c) => c.upstream_subject === account)!;
  /** Every token the vault holds for `login`, opened: canaries for every answer and page. */
  const heldTokens = async (login: string) => {
    const rows = await query<{
      subject_iss: string;
      connection_id: string;
      kind: string;
      ciphertext: Buffer;
      key_id: string;
    }>('SELECT subject_iss, connection_id, kind, ciphertext, key_id FROM secrets WHERE subject_sub = $1', [login]);
    const box = secretsBox(stack);
    return rows.map((r) =>
      box.open(
        { ciphertext: r.ciphertext, keyId: r.key_id },
        `${r.subject_iss}\n${login}\nreports\n${r.kind}\n${r.connection_id}`,
      ),
    );
  };
  const secretsRow = (connectionId: string) =>
    query<{ kind: string; row_version: number; updated_at: Date }>(
      'SELECT kind, row_version, updated_at FROM secrets WHERE connection_id = $1 ORDER BY kind',
      [connectionId],
    );
  const reportsOf = (result: unknown) =>
    ((result as { structuredContent?: { reports?: { title: string }[] } }).structuredContent?.reports ?? []).map(
      (r) => r.title,
    );
  const listAs = async (account: string) => {
    const listed = await callTool(stack, tokens.alice, 'reports_list', { account }, {}, BOTH_CAPS);
    expect(listed.json.result).toMatchObject({ resultType: 'complete' });
    return reportsOf(listed.json.result);
  };

  it('adds a second account from the connections page: the first stays the default, the new one is a connection of its own', async () => {
    const args = { title: 'First account', body: 'connect once' };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    const done = await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    expect(done.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    const [first] = await connectionsOf('alice');
    expect(first).toMatchObject({ upstream_subject: ALICE_RS, preferred: true, preferred_chosen_at: null });
    // The operation accepted after connecting names, on its receipt, the connection it ran on.
    expect(
      await query(
        "SELECT r.connection_id FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.subject_sub = 'alice'",
      ),
    ).toEqual([{ connection_id: first!.id }]);

    const { browser, page } = await signedIn(stack, 'alice');
    expect(page.text).toContain('Add another Report Service account');
    const review = await browser.submitForm(page, {}, { form: '/connections/add' });
    expect(review.url).toMatch(new RegExp(`^${stack.brokerUrl}/connect/[A-Za-z0-9_-]{43}$`));
    expect(review.text).toContain('<h1>Add another Report Service account?</h1>');
    const added = await consentAndAuthorize(stack, { browser, review }, 'mallory');
    expect(added.status).toBe(200);
    expect(added.url).toMatch(new RegExp(`^${stack.brokerUrl}/connect/done`));

    const both = await connectionsOf('alice');
    expect(both).toEqual([
      { ...first, state: 'active' },
      {
        id: expect.any(String),
        upstream_subject: MALLORY_RS,
        preferred: false,
        preferred_chosen_at: null,
        state: 'active',
      },
    ]);
    expect(both[1]!.id).not.toBe(first!.id);
    // The first account's tokens are untouched; the flow's ledger says a connection was added.
    expect((await secretsRow(first!.id)).map((s) => s.row_version)).toEqual([1, 1]);
    const [flow] = await query<{ id: string }>(
      "SELECT id FROM elicitation_navigations WHERE subject_sub = 'alice' AND lineage = 'reconnect' AND request_digest = 'add account reports'",
    );
    expect(
      await query(
        "SELECT evidence->>'addedAccount' AS added FROM navigation_events WHERE navigation_id = $1 AND event = 'callback_verified'",
        [flow!.id],
      ),
    ).toEqual([{ added: 'true' }]);

    const listed = await browser.get(`${stack.brokerUrl}/connections`);
    expect(listed.text).toContain(ALICE_RS);
    expect(listed.text).toContain(MALLORY_RS);
    expect(listed.text).toContain(
      'Your default Report Service account: calls that name no account use it (the first you connected).',
    );
    for (const token of await heldTokens('alice')) expect(listed.text).not.toContain(token);
  });

  it('asks which account with a form listing both by name and no token; the chosen one is used, the other untouched, and only for that retry', async () => {
    const alice = await byAccount('alice', ALICE_RS);
    const mallory = await byAccount('alice', MALLORY_RS);
    const aliceBefore = await secretsRow(alice.id);
    const args = { title: 'Chosen account', body: 'made with the account chosen' };

    const asked = await callTool(stack, tokens.alice, 'reports_create', args, {}, BOTH_CAPS);
    const result = asked.json.result as {
      resultType: string;
      requestState: string;
      inputRequests: Record<
        string,
        { method: string; params: { mode: string; message: string; requestedSchema: unknown } }
      >;
    };
    expect(result.resultType).toBe('input_required');
    expect(Object.keys(result.inputRequests)).toEqual(['account']);
    const form = result.inputRequests['account']!;
    expect(form.params.mode).toBe('form');
    expect(form.params.requestedSchema).toEqual({
      type: 'object',
      properties: {
        account: {
          type: 'string',
          title: 'Report Service account',
          description: 'The Report Service account to use for this call',
          enum: [ALICE_RS, MALLORY_RS],
        },
      },
      required: ['account'],
    });
    for (const token of await heldTokens('alice')) expect(asked.text).not.toContain(token);

    const retry = (answer: unknown) =>
      callTool(
        stack,
        tokens.alice,
        'reports_create',
        args,
        { requestState: result.requestState, inputResponses: { account: answer } },
        BOTH_CAPS,
      );
    // An account not offered changes nothing.
    const wrong = await retry({ action: 'accept', content: { account: 'rs-user-bob' } });
    expect(JSON.stringify(wrong.json)).toContain('must choose one of the accounts offered');

    const chosen = await retry({ action: 'accept', content: { account: MALLORY_RS } });
    expect(chosen.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created' },
      _meta: { 'io.connect-broker/connection': { id: mallory.id, account: MALLORY_RS } },
    });
    // The Report Service saw mallory's token: the report is hers, not alice's.
    expect(await listAs(MALLORY_RS)).toContain('Chosen account');
    expect(await listAs(ALICE_RS)).not.toContain('Chosen account');
    expect(await secretsRow(alice.id)).toEqual(aliceBefore);

    // The choice was for that call's retry only: the next call asks again.
    const again = await callTool(stack, tokens.alice, 'reports_list', {}, {}, BOTH_CAPS);
    expect(again.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { account: { params: { mode: 'form' } } },
    });
  });

  it('runs on the account the account argument names, by name or connection id, and refuses one it does not know', async () => {
    const mallory = await byAccount('alice', MALLORY_RS);
    const byId = await callTool(stack, tokens.alice, 'reports_list', { account: mallory.id }, {}, BOTH_CAPS);
    expect(byId.json.result).toMatchObject({
      resultType: 'complete',
      _meta: { 'io.connect-broker/connection': { id: mallory.id } },
    });
    expect(reportsOf(byId.json.result)).toContain('Chosen account');

    const unknown = await callTool(stack, tokens.alice, 'reports_list', { account: 'rs-user-nobody' }, {}, BOTH_CAPS);
    expect(unknown.json.result).toMatchObject({
      resultType: 'complete',
      isError: true,
      structuredContent: { status: 'unknown_account', known: [ALICE_RS, MALLORY_RS] },
    });
    // Without form elicitation the host is told to name the account.
    const noForm = await callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS);
    expect(noForm.json.result).toMatchObject({
      isError: true,
      structuredContent: { status: 'account_required', accounts: [ALICE_RS, MALLORY_RS] },
    });
  });

  it('on 2025-11-25 asks in a nested form elicitation and uses the chosen account for that call', async () => {
    const mallory = await byAccount('alice', MALLORY_RS);
    const asked: ElicitRequestFormParams[] = [];
    const legacy = await connectLegacy(stack, tokens.alice, {
      form: (params) => {
        asked.push(params);
        return { action: 'accept', content: { account: MALLORY_RS } };
      },
    });
    try {
      const listed = await legacy.client.callTool({ name: 'reports_list', arguments: {} });
      expect(asked).toHaveLength(1);
      expect(asked[0]!.requestedSchema.properties['account']).toMatchObject({ enum: [ALICE_RS, MALLORY_RS] });
      for (const token of await heldTokens('alice')) expect(JSON.stringify(asked)).not.toContain(token);
      expect(listed).toMatchObject({ _meta: { 'io.connect-broker/connection': { id: mallory.id } } });
      expect(reportsOf(listed)).toContain('Chosen account');
    } finally {
      await closeLegacy(legacy);
    }
  });

  it('"Make default" on the page: calls naming no account then run on it without asking', async () => {
    const mallory = await byAccount('alice', MALLORY_RS);
    const { browser, page } = await signedIn(stack, 'alice');
    // Without the page's CSRF token nothing changes.
    const forged = await browser.post(`${stack.brokerUrl}/connections/${mallory.id}/default`, { _csrf: 'forged' });
    expect(forged.status).toBe(403);
    expect((await byAccount('alice', MALLORY_RS)).preferred).toBe(false);
    // Another user cannot make alice's connection theirs, nor touch it.
    const bob = await signedIn(stack, 'bob');
    const csrf = csrfTokenFor(
      bob.browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === SESSION_COOKIE)!.value,
    );
    expect(
      (await bob.browser.post(`${stack.brokerUrl}/connections/${mallory.id}/default`, { _csrf: csrf })).status,
    ).toBe(404);

    const made = await browser.submitForm(page, {}, { form: `/connections/${mallory.id}/default` });
    expect(made.url).toBe(`${stack.brokerUrl}/connections#connection-${mallory.id}`);
    expect(await connectionsOf('alice')).toEqual([
      expect.objectContaining({ upstream_subject: ALICE_RS, preferred: false, preferred_chosen_at: null }),
      expect.objectContaining({ upstream_subject: MALLORY_RS, preferred: true, preferred_chosen_at: expect.any(Date) }),
    ]);
    const listed = await callTool(stack, tokens.alice, 'reports_list', {}, {}, BOTH_CAPS);
    expect(listed.json.result).toMatchObject({
      resultType: 'complete',
      _meta: { 'io.connect-broker/connection': { id: mallory.id } },
    });
    // The argument still wins over the default.
    const alice = await byAccount('alice', ALICE_RS);
    const named = await callTool(stack, tokens.alice, 'reports_list', { account: ALICE_RS }, {}, BOTH_CAPS);
    expect(named.json.result).toMatchObject({ _meta: { 'io.connect-broker/connection': { id: alice.id } } });
  });

  it('"add another account" as an account already connected updates that connection in place; a reconnect as another account, without adding it, is still refused and changes nothing', async () => {
    const before = await connectionsOf('alice');
    const mallory = before.find((c) => c.upstream_subject === MALLORY_RS)!;
    const malloryTokens = await secretsRow(mallory.id);
    const { browser, page } = await signedIn(stack, 'alice');
    const review = await browser.submitForm(page, {}, { form: '/connections/add' });
    const done = await consentAndAuthorize(stack, { browser, review }, 'mallory');
    expect(done.status).toBe(200);
    // The done page says what happened: nothing was added, the account connected already was renewed.
    expect(done.text).toContain('<h1>No other Report Service account was added</h1>');
    expect(done.text).not.toContain('Another Report Service account is connected');
    const after = await connectionsOf('alice');
    expect(after.map((c) => c.id)).toEqual(before.map((c) => c.id));
    // The whole token set replaced, the id kept.
    const replaced = await secretsRow(mallory.id);
    expect(replaced.map((s) => s.kind)).toEqual(['access_token', 'refresh_token']);
    for (const [i, row] of replaced.entries())
      expect(row.updated_at.getTime()).toBeGreaterThan(malloryTokens[i]!.updated_at.getTime());

    // bob connects once through a tool; his reconnect then signs in as another account: refused.
    const args = { title: 'Bob first', body: 'b' };
    const first = await elicitConnection(stack, tokens.bob, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, first.url, 'bob'), 'bob');
    await retryConnection(stack, tokens.bob, 'reports_create', args, first.requestState, 'accept');
    const bobBefore = await connectionsOf('bob');
    expect(bobBefore).toHaveLength(1);
    const { browser: bobBrowser } = await signedIn(stack, 'bob');
    // A reconnect needs a connection that needs it: make bob's need one, then reconnect as mallory.
    await query("UPDATE connections SET state = 'needs_reauth' WHERE id = $1", [bobBefore[0]!.id]);
    await query('DELETE FROM secrets WHERE connection_id = $1', [bobBefore[0]!.id]);
    const again = await bobBrowser.get(`${stack.brokerUrl}/connections`);
    const reconnectReview = await bobBrowser.submitForm(again, {}, { form: '/reconnect' });
    const refused = await consentAndAuthorize(stack, { browser: bobBrowser, review: reconnectReview }, 'mallory');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('but your Report Service connection is rs-user-bob');
    expect(await connectionsOf('bob')).toEqual([{ ...bobBefore[0], state: 'needs_reauth' }]);
  });
});
