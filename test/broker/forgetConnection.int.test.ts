import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { forgetConnection } from '../../src/broker/forgetConnection.js';
import { systemClock } from '../../src/shared/clock.js';
import {
  consentAndAuthorize,
  elicitConnection,
  openConnectLink,
  retryConnection,
  URL_CAPS,
} from '../support/connectFlow.js';
import {
  connectThroughList,
  expectNoTokenIn,
  FORGOTTEN,
  forgottenEvents,
  killStoredToken,
  secretsBox,
} from '../support/deadToken.js';
import { reportsAt } from '../support/forgedTokens.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A provider's 401 to a stored token: the broker forgets that connection and the
// user is asked to connect again; no operation is ever done twice.
describe('an upstream 401 on the 2026-07-28 path and in the reconcile sweep', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });

  afterEach(() => {
    nock.cleanAll();
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const aliceSecrets = async () => (await query("SELECT kind FROM secrets WHERE subject_sub = 'alice'")).length;
  const titled = async (title: string) => (await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === title);
  const receiptOf = async (navigationId: string) =>
    (await query('SELECT outcome_status, outcome FROM operation_receipts WHERE navigation_id = $1', [navigationId]))[0];
  const flowOf = async (title: string) =>
    (
      await query('SELECT id FROM elicitation_navigations WHERE purpose LIKE $1 ORDER BY created_at', [`%${title}%`])
    ).map((r) => r.id as string);
  const REFUSED = { status: 'reconnect_required', error: 'upstream_unauthorized', provider: 'reports' };

  /** alice, not connected, calls reports_create and completes its link in the browser; the host has not retried yet. */
  async function connectedFor(args: { title: string; body: string }) {
    await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    return { requestState: elicited.requestState, flow: (await flowOf(args.title))[0]! };
  }

  /** The reconnect a refused call asks for: a fresh call elicits a new link, the browser completes it, the retry is accepted. */
  async function reconnectAndCreate(args: { title: string; body: string }) {
    const { requestState } = await connectedFor(args);
    const created = await retryConnection(stack, tokens.alice, 'reports_create', args, requestState, 'accept');
    expect(created.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: args.title } },
    });
    return created;
  }

  it('a direct call whose stored token gets a 401 forgets it (ledger) and asks to connect, as for a user never connected; the retry creates the report once', async () => {
    const args = { title: 'Dead token direct', body: 'b' };
    await connectThroughList(stack, tokens.alice, 'alice');
    const killed = await killStoredToken(stack, 'alice');

    const asked = await callTool(stack, tokens.alice, 'reports_create', args, {}, URL_CAPS);
    expect(asked.json.result).toMatchObject({
      resultType: 'input_required',
      requestState: expect.any(String),
      inputRequests: { connect: { method: 'elicitation/create', params: { mode: 'url' } } },
    });
    expect(await aliceSecrets()).toBe(0);
    expect(await forgottenEvents(stack, killed.navigationId)).toEqual([FORGOTTEN]);
    const [flow] = await flowOf(args.title);
    expect(await receiptOf(flow!)).toBeUndefined();

    const { requestState, inputRequests } = asked.json.result as {
      requestState: string;
      inputRequests: { connect: { params: { url: string } } };
    };
    const url = inputRequests.connect.params.url;
    await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice'), 'alice');
    const created = await retryConnection(stack, tokens.alice, 'reports_create', args, requestState, 'accept');
    expect(created.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    const again = await retryConnection(stack, tokens.alice, 'reports_create', args, requestState, 'accept');
    expect(again.json.result?.['structuredContent']).toEqual(created.json.result?.['structuredContent']);
    expect(await titled(args.title)).toHaveLength(1);
    expect(await receiptOf(flow!)).toMatchObject({ outcome_status: 'succeeded' });
    expectNoTokenIn(stack, killed, [asked.text, created.text, again.text]);
  });

  it('two calls refused at once forget the connection once and both ask to connect', async () => {
    await connectThroughList(stack, tokens.alice, 'alice');
    const killed = await killStoredToken(stack, 'alice');
    // The second instance's flow is its own operation: its callback URL is not registered at the
    // Report Service, so a later connect must not reuse it.
    const answers = await Promise.all([
      callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS),
      callTool(stack, tokens.alice, 'reports_create', { title: 'Refused at once', body: 'b' }, {}, URL_CAPS, {
        baseUrl: stack.secondUrl,
      }),
    ]);
    for (const answer of answers) expect(answer.json.result).toMatchObject({ resultType: 'input_required' });
    expect(await forgottenEvents(stack, killed.navigationId)).toEqual([FORGOTTEN]);
    expect(await aliceSecrets()).toBe(0);
  });

  it('forgets only the token that was refused: a connection stored meanwhile is kept', async () => {
    await connectThroughList(stack, tokens.alice, 'alice');
    const deps = { pool: stack.db.pool, box: secretsBox(stack), clock: systemClock };
    const { id } = (await query("SELECT connection_id AS id FROM secrets WHERE subject_sub = 'alice' LIMIT 1"))[0] as {
      id: string;
    };
    const killed = await killStoredToken(stack, 'alice');
    // The refused token is the one the callback stored before; the row now holds another one.
    expect(await forgetConnection(deps, id, killed.live)).toBe(false);
    expect(await aliceSecrets()).toBe(2);
    expect(await forgottenEvents(stack, killed.navigationId)).toEqual([]);
    expect(await forgetConnection(deps, id, killed.dead)).toBe(true);
    expect(await aliceSecrets()).toBe(0);
    expect(await forgottenEvents(stack, killed.navigationId)).toEqual([FORGOTTEN]);
  });

  const losses = [
    {
      how: 'the provider answers 401',
      lose: async () => killStoredToken(stack, 'alice'),
      outcome: { error: 'upstream_unauthorized', provider: 'reports' },
    },
    {
      how: 'the connection is gone by then',
      lose: async () => void (await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'")),
      outcome: { error: 'not_connected', provider: 'reports' },
    },
  ];

  it.each(losses)(
    'an accepted operation whose perform finds $how records it failed, tells the host to reconnect, and is never done later: not by a retry, not by the sweep',
    async ({ how, lose, outcome }) => {
      const args = { title: `Accepted, then ${how}`, body: 'b' };
      const { requestState, flow } = await connectedFor(args);
      const killed = await lose();

      const refused = await retryConnection(stack, tokens.alice, 'reports_create', args, requestState, 'accept');
      expect(refused.json.result).toMatchObject({
        resultType: 'complete',
        isError: true,
        structuredContent: { ...REFUSED, ...outcome },
      });
      expect((refused.json.result!['content'] as { text: string }[])[0]!.text).toMatch(
        /was not done.*Call the tool again, as a new call, to connect again/,
      );
      expect(await receiptOf(flow)).toEqual({ outcome_status: 'failed', outcome });
      expect(await aliceSecrets()).toBe(0);
      if (killed) expect(await forgottenEvents(stack, flow)).toEqual([FORGOTTEN]);

      await reconnectAndCreate(args);
      // The refused operation's own retry, now that a new token exists, reads its record.
      const late = await retryConnection(stack, tokens.alice, 'reports_create', args, requestState, 'accept');
      expect(late.json.result).toMatchObject({ isError: true, structuredContent: { ...REFUSED, ...outcome } });
      expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
      expect(await titled(args.title)).toHaveLength(1);
      if (killed) expectNoTokenIn(stack, killed, [refused.text, late.text]);
    },
  );

  it('the sweep re-driving a pending receipt with a refused token forgets it and records the outcome failed; the reconnect creates the report once', async () => {
    const args = { title: 'Re-driven into a 401', body: 'b' };
    const { requestState, flow } = await connectedFor(args);
    nock(stack.dev.reports.issuer, { allowUnmocked: true })
      .post('/api/reports')
      .replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    const lost = await retryConnection(stack, tokens.alice, 'reports_create', args, requestState, 'accept');
    expect(lost.json.result).toMatchObject({ isError: true });
    expect(await receiptOf(flow)).toMatchObject({ outcome_status: 'pending' });
    const killed = await killStoredToken(stack, 'alice');

    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 1, waiting: 0 });
    expect(await receiptOf(flow)).toEqual({
      outcome_status: 'failed',
      outcome: { error: 'upstream_unauthorized', provider: 'reports' },
    });
    expect(await aliceSecrets()).toBe(0);
    expect(await forgottenEvents(stack, flow)).toEqual([FORGOTTEN]);

    const told = await retryConnection(stack, tokens.alice, 'reports_create', args, requestState, 'accept');
    expect(told.json.result).toMatchObject({ isError: true, structuredContent: REFUSED });
    await reconnectAndCreate(args);
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
    expect(await titled(args.title)).toHaveLength(1);
    expectNoTokenIn(stack, killed, [told.text]);
  });
});
