import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { digestOf } from '../../src/shared/tokens.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { reportsAt } from '../support/forgedTokens.js';
import { routedFetch, startFaultProxy, type Fault, type FaultProxy } from '../support/faultProxy.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';
import { errorTitleOf } from '../../src/web/errorTitle.js';

// The provider misbehaves, at the HTTP level the broker sees: a loopback proxy between the broker
// and the Report Service (test/support/faultProxy.ts) makes it slow, resets or stalls the
// connection, answers 5xx or garbage, or lets a request through and loses the answer (a
// partition in the middle of a token exchange or a business call). Whatever it does: a clear
// error within the broker's deadline, no token stored from an exchange that did not finish, an
// operation whose outcome is unknown recorded and reconciled, and nothing done twice at the
// provider (the Report Service keeps one report per Idempotency-Key).

/** The deadline of the broker's provider requests in this suite (its fetch's timeout). */
const DEADLINE_MS = 1_500;
const ALICE_AT_REPORTS = 'rs-user-alice';

/** A fetch whose requests end at `ms`, whatever signal the caller brings (as src/shared/httpClient.ts does). */
function withDeadline(fetch: typeof globalThis.fetch, ms: number): typeof globalThis.fetch {
  return ((input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) =>
    fetch(input, {
      ...init,
      signal: init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms),
    })) as typeof fetch;
}

describe('the provider misbehaves', () => {
  const route: { from?: string; to?: string } = {};
  const { stack, tokens } = useBrokerStack(
    { retryWaitMs: 200, brokerFetch: (fetch) => routedFetch(withDeadline(fetch, DEADLINE_MS), route) },
    { users: ['alice'] },
  );
  let proxy: FaultProxy;

  beforeAll(async () => {
    const reports = new URL(stack.dev.reports.issuer).origin;
    proxy = await startFaultProxy(reports, stack.tls);
    Object.assign(route, { from: reports, to: proxy.origin });
    return () => proxy.close();
  });

  afterEach(async () => {
    proxy.clear();
    // Each test connects alice again: her tokens go; her connection stays, to be updated in place
    // (receipts name the connection they were performed through).
    await stack.db.pool.query('DELETE FROM secrets');
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const statusOf = async (id: string) =>
    (await query('SELECT status FROM elicitation_navigations WHERE id = $1', [id]))[0]?.status as string;
  const reportsTitled = async (title: string) =>
    (await reportsAt(stack, ALICE_AT_REPORTS)).filter((r) => r.title === title);
  const secretsHeld = async () => (await query('SELECT kind FROM secrets ORDER BY kind')).map((r) => r.kind as string);
  const TOKEN = { method: 'POST', path: /^\/token\b/ };
  const CREATE = { method: 'POST', path: /\/reports$/ };

  async function elicit(title: string) {
    const args = { title, body: `${title}: body` };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const [row] = await query('SELECT id FROM elicitation_navigations WHERE handle_digest = $1', [
      digestOf(new URL(elicited.url).pathname.split('/').pop()!),
    ]);
    return { args, ...elicited, id: row.id as string };
  }

  const timed = async <T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> => {
    const started = Date.now();
    const value = await run();
    return { value, ms: Date.now() - started };
  };

  describe('at the token exchange', () => {
    const faults: { name: string; fault: Fault; reachesProvider: boolean }[] = [
      { name: 'resets the connection', fault: { kind: 'reset' }, reachesProvider: false },
      { name: 'never answers', fault: { kind: 'stall' }, reachesProvider: false },
      { name: 'answers 503', fault: { kind: 'status', status: 503 }, reachesProvider: false },
      { name: 'answers garbage', fault: { kind: 'garbage' }, reachesProvider: false },
      { name: 'issues tokens and the answer is lost', fault: { kind: 'loseAnswer' }, reachesProvider: true },
      { name: 'issues tokens and the answer never comes', fault: { kind: 'holdAnswer' }, reachesProvider: true },
      { name: 'issues tokens and the answer is cut in half', fault: { kind: 'cutBody' }, reachesProvider: true },
    ];

    it.each(faults)(
      'when the provider $name: a clear error page in time, no token stored, and a fresh consent connects',
      async ({ fault, reachesProvider }) => {
        const flow = await elicit(`Exchange ${fault.kind}`);
        const run = await openConnectLink(stack, flow.url, 'alice');
        proxy.inject(TOKEN, fault);
        const from = proxy.seen.length;
        const { value: page, ms } = await timed(() => consentAndAuthorize(stack, run, 'alice'));

        const exchanges = proxy.seen.slice(from).filter((r) => TOKEN.path.test(r.path));
        expect(exchanges.map((r) => [r.fault, r.upstreamStatus ?? 'none'])).toEqual([
          [fault.kind, reachesProvider ? 200 : 'none'],
        ]);
        expect(page.status).toBeGreaterThanOrEqual(500);
        expect(page.text).toContain(`<h1>${errorTitleOf(page.status)}</h1>`);
        expect(page.text).not.toMatch(/\n\s+at |node_modules|eyJ[\w-]+\.eyJ/);
        expect(ms).toBeLessThan(DEADLINE_MS + 3_000);
        expect(await secretsHeld()).toEqual([]);
        expect(await statusOf(flow.id)).toBe('OUT_OF_BAND_PENDING');

        // Recoverable: the same link, consented again, connects; the host's retry is done once.
        const done = await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice'), 'alice');
        expect(done.text).toContain('Report Service is connected');
        expect(await secretsHeld()).toEqual(['access_token', 'refresh_token']);
        const retried = await retryConnection(
          stack,
          tokens.alice,
          'reports_create',
          flow.args,
          flow.requestState,
          'accept',
        );
        expect(retried.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
        expect(await reportsTitled(flow.args.title)).toHaveLength(1);
      },
    );
  });

  describe('at the business call of an accepted operation', () => {
    const lost: { name: string; fault: Fault }[] = [
      { name: 'the answer is lost', fault: { kind: 'loseAnswer' } },
      { name: 'the answer never comes', fault: { kind: 'holdAnswer' } },
      { name: 'the answer is garbled', fault: { kind: 'garbleAnswer' } },
      { name: 'the answer is cut in half', fault: { kind: 'cutBody' } },
    ];

    /** alice connects through the flow and accepts; the proxy does `fault` to the one create it sends. */
    async function acceptedUnder(title: string, fault: Fault) {
      const flow = await elicit(title);
      const done = await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice'), 'alice');
      expect(done.text).toContain('Report Service is connected');
      proxy.inject(CREATE, fault);
      const from = proxy.seen.length;
      const { value: answer, ms } = await timed(() =>
        retryConnection(stack, tokens.alice, 'reports_create', flow.args, flow.requestState, 'accept'),
      );
      const creates = proxy.seen.slice(from).filter((r) => CREATE.path.test(r.path) && r.method === 'POST');
      return { flow, answer, ms, creates };
    }

    it.each(lost)(
      'when the report is created and $name: a clear tool error in time, the sweep reconciles it, and the report exists once',
      async ({ fault }) => {
        const title = `Create ${fault.kind}`;
        const { flow, answer, ms, creates } = await acceptedUnder(title, fault);
        expect(creates.map((r) => r.fault)).toEqual([fault.kind]);
        expect(ms).toBeLessThan(DEADLINE_MS + 3_000);
        const result = answer.json.result as { isError?: boolean; content: { text: string }[] };
        expect(result.isError).toBe(true);
        expect(result.content[0]!.text).not.toMatch(/Internal error/);
        expect(await reportsTitled(title)).toHaveLength(1);
        const [receipt] = await query('SELECT outcome_status FROM operation_receipts WHERE navigation_id = $1', [
          flow.id,
        ]);
        expect(receipt).toEqual({ outcome_status: 'pending' });

        // The reconcile sweep re-drives it with the receipt's key: the provider replays its answer.
        expect(await stack.reconcile(0, 10)).toMatchObject({ redriven: 1 });
        const settled = await retryConnection(
          stack,
          tokens.alice,
          'reports_create',
          flow.args,
          flow.requestState,
          'accept',
        );
        expect(settled.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
        expect(await reportsTitled(title)).toHaveLength(1);
      },
    );

    const refused: { name: string; fault: Fault }[] = [
      { name: 'resets the connection before it reaches the provider', fault: { kind: 'reset' } },
      { name: 'answers 503', fault: { kind: 'status', status: 503 } },
      { name: 'never answers', fault: { kind: 'stall' } },
    ];

    it.each(refused)(
      'when the proxy $name: a clear tool error in time, and a report at most once after reconciliation',
      async ({ fault }) => {
        const title = `Create ${fault.kind}`;
        const { answer, ms, creates } = await acceptedUnder(title, fault);
        expect(creates.map((r) => r.fault)).toEqual([fault.kind]);
        expect(ms).toBeLessThan(DEADLINE_MS + 3_000);
        const result = answer.json.result as { isError?: boolean; content: { text: string }[] };
        expect(result.isError).toBe(true);
        expect(result.content[0]!.text).not.toMatch(/Internal error/);
        await stack.reconcile(0, 10);
        expect((await reportsTitled(title)).length).toBeLessThanOrEqual(1);
      },
    );
  });

  describe('at a connected call', () => {
    it('answers a slow provider within the deadline with the report created, and a stalled one with a clear error in time', async () => {
      const flow = await elicit('Connect first');
      await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice'), 'alice');
      await retryConnection(stack, tokens.alice, 'reports_create', flow.args, flow.requestState, 'accept');

      proxy.inject(CREATE, { kind: 'delay', ms: DEADLINE_MS / 3 });
      const slow = await callTool(stack, tokens.alice, 'reports_create', { title: 'Slow', body: '' });
      expect(slow.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });

      proxy.inject(CREATE, { kind: 'stall' });
      const { value: stalled, ms } = await timed(() =>
        callTool(stack, tokens.alice, 'reports_create', { title: 'Stalled', body: '' }),
      );
      expect(ms).toBeLessThan(DEADLINE_MS + 3_000);
      const result = stalled.json.result as { isError?: boolean; content: { text: string }[] };
      expect(result.isError).toBe(true);
      expect(result.content[0]!.text).toMatch(/Whether the request was carried out is unknown/);
      expect(await reportsTitled('Stalled')).toEqual([]);
    });

    // A connected call has no receipt to re-drive: the broker cannot know, so it says so and sends nothing again.
    it.each([{ kind: 'loseAnswer' } as const, { kind: 'garbleAnswer' } as const])(
      'tells the host the outcome is unknown, and sends nothing again, when a created report answers with $kind',
      async (fault) => {
        const flow = await elicit(`Connect for ${fault.kind}`);
        await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice'), 'alice');
        await retryConnection(stack, tokens.alice, 'reports_create', flow.args, flow.requestState, 'accept');
        const title = `Connected ${fault.kind}`;
        proxy.inject(CREATE, fault);
        const from = proxy.seen.length;
        const answer = await callTool(stack, tokens.alice, 'reports_create', { title, body: '' });
        const result = answer.json.result as { isError?: boolean; content: { text: string }[] };
        expect(result.isError).toBe(true);
        expect(result.content[0]!.text).toMatch(/is unknown/);
        expect(proxy.seen.slice(from).filter((r) => r.method === 'POST' && CREATE.path.test(r.path))).toHaveLength(1);
        expect(await reportsTitled(title)).toHaveLength(1);
      },
    );
  });
});
