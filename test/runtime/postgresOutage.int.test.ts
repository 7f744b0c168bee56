import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import {
  authorizeUpToCallback,
  elicitConnection,
  holdFlowWithWaitingRetry,
  openConnectLink,
  retryConnection,
} from '../support/connectFlow.js';
import { initialize } from '../support/legacyFaultScenarios.js';
import { callTool, type WireResponse } from '../support/mcpWire.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import type { BrowserResponse } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Postgres taken away and given back under a running broker (both instances of the stack), through
// a TCP proxy between the broker and the run's Postgres (embedded, or DATABASE_URL's server in CI's
// second pass): refused connections, then connections that are never answered, then a cut inside
// the callback's transaction at each of its statements.

const OUTAGE = 'The service cannot reach its database at the moment. Try again in a few seconds.';
const NOTES = 'file:///work/notes/alice';

let proxy: TcpProxy | undefined;
// Registered before the stack's hooks, so it runs after the stack has closed.
afterAll(async () => proxy?.close());

describe('Postgres goes away and comes back', () => {
  const { stack, tokens } = useBrokerStack(
    async () => {
      const direct = new URL(inject('databaseUrl'));
      proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
      // Alice keeps a flow open per cut below: more than the default five at once.
      return { retryWaitMs: 15_000, quotas: { openPerProvider: 20 }, database: { poolUrl: proxy.via(direct.href) } };
    },
    { users: ['alice', 'bob', 'mallory'] },
  );
  // The test's own way to the database, around the proxy: what is stored, whatever the broker sees.
  let direct: Pool;
  beforeAll(() => {
    direct = createPool({ url: stack.db.url, poolMax: 2, schema: stack.db.schema }, createLogger({ level: 'silent' }));
  });
  afterAll(async () => direct.end());
  afterEach(async () => proxy!.restore());

  const figures = { requests: 0, answered503: 0, answered5xxOther: 0, cutPoints: 0, halfWritten: 0 };
  afterAll(() => {
    console.log(`postgres outage: ${JSON.stringify(figures)}`);
  });
  const count = (response: { status: number }) => {
    figures.requests++;
    if (response.status === 503) figures.answered503++;
    else if (response.status >= 500) figures.answered5xxOther++;
  };

  /** A 2026-07-28 answer to the outage: 503, Retry-After, -32603 naming it, with the request's id. */
  const expectOutageAnswer = (response: WireResponse, id: unknown) => {
    count(response);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(response.json).toEqual({
      jsonrpc: '2.0',
      id,
      error: { code: -32603, message: OUTAGE, data: { retryAfterSeconds: 5 } },
    });
  };
  const expectOutagePage = (page: BrowserResponse) => {
    count(page);
    expect(page.status).toBe(503);
    expect(page.headers.get('retry-after')).toBe('5');
    expect(page.text).toContain(OUTAGE);
    expect(page.text).not.toMatch(/Internal error|ECONNREFUSED|127\.0\.0\.1:\d|terminat/);
  };
  const waitUntilReady = async (baseUrl: string) => {
    await expect
      .poll(async () => (await stack.fetch(`${baseUrl}/readyz`)).status, { timeout: 15_000, interval: 100 })
      .toBe(200);
  };

  it('answers 503 with Retry-After, promptly, on /mcp (both eras), the pages and /readyz, and recovers by itself', async () => {
    // Before: a signed-in browser on a connect link, and a 2025-11-25 session.
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', { title: 'Outage', body: 'x' });
    const run = await openConnectLink(stack, elicited.url, 'alice');
    expect(run.review.status).toBe(200);
    const session = await initialize(stack, tokens.alice);

    await proxy!.cut();
    let started = Date.now();
    const modern = await callTool(stack, tokens.alice, 'notes_create', {
      workspaceUri: NOTES,
      title: 'Lost',
      body: 'x',
    });
    expect(Date.now() - started).toBeLessThan(1_500);
    expectOutageAnswer(modern, modern.json.id);
    expect(modern.json.id).toEqual(expect.any(Number));
    // A connection tool (its flows, receipts and vault all in Postgres), on the second instance.
    const onSecond = await callTool(stack, tokens.alice, 'reports_list', {}, {}, undefined, {
      baseUrl: stack.secondUrl,
    });
    expectOutageAnswer(onSecond, onSecond.json.id);
    // A 2025-11-25 call's error travels in the call's own response (mcp/legacy/legacyEndpoint.ts).
    const legacy = await session.call('notes_list', { workspaceUri: NOTES });
    expect(legacy.final.error).toEqual({ code: -32603, message: OUTAGE, data: { retryAfterSeconds: 5 } });
    // The pages, as HTML and as JSON.
    expectOutagePage(await run.browser.get(elicited.url));
    const json = await stack.fetch(`${stack.brokerUrl}/connect/done?n=${crypto.randomUUID()}`, {
      headers: { accept: 'application/json' },
    });
    count(json);
    expect(json.status).toBe(503);
    expect(json.headers.get('retry-after')).toBe('5');
    expect(await json.json()).toEqual({ error: 'unavailable', message: OUTAGE, requestId: expect.any(String) });
    // Probes: the process is alive, and not ready.
    expect((await stack.fetch(`${stack.brokerUrl}/healthz`)).status).toBe(200);
    const ready = await stack.fetch(`${stack.brokerUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({
      status: 'not_ready',
      database: 'unreachable',
      identityProvider: 'ok',
      reasons: ['database: unreachable (the log says why)'],
    });

    // A server that accepts and never answers: bounded by the pool's 5 s connect timeout, /readyz by its 2 s.
    await proxy!.stall();
    started = Date.now();
    const stalled = await callTool(stack, tokens.alice, 'notes_list', { workspaceUri: NOTES });
    const stalledMs = Date.now() - started;
    expectOutageAnswer(stalled, stalled.json.id);
    expect(stalledMs).toBeLessThan(7_000);
    started = Date.now();
    expect((await stack.fetch(`${stack.brokerUrl}/readyz`)).status).toBe(503);
    expect(Date.now() - started).toBeLessThan(3_000);

    // Back, without a restart: both instances ready, a tool call works, the page too.
    await proxy!.restore();
    const back = Date.now();
    await waitUntilReady(stack.brokerUrl);
    await waitUntilReady(stack.secondUrl);
    const created = await callTool(stack, tokens.alice, 'notes_create', {
      workspaceUri: NOTES,
      title: 'Back',
      body: 'y',
    });
    expect(created.status).toBe(200);
    expect(created.json.result).toMatchObject({ structuredContent: { note: { title: 'Back' } } });
    const listed = await session.call('notes_list', { workspaceUri: NOTES });
    expect(listed.final.result).toMatchObject({
      structuredContent: { notes: expect.arrayContaining([expect.objectContaining({ title: 'Back' })]) },
    });
    expect((await run.browser.get(elicited.url)).status).toBe(200);
    console.log(`postgres outage: ready again ${Date.now() - back} ms after Postgres returned`);
    const notes = await direct.query<{ title: string }>(
      "SELECT title FROM notes WHERE title IN ('Lost', 'Back') ORDER BY created_at",
    );
    expect(notes.rows.map((r) => r.title)).toEqual(['Back']);
    // Nothing answered 500 or "Internal error" on the way.
    expect(stack.logs.join('')).not.toMatch(/"msg":"(MCP endpoint failed|MCP request failed|tool failed)"/);
  });

  it('keeps a retry waiting on instance 2 through the outage, and wakes it by a callback on instance 1 (LISTEN again)', async () => {
    const held = await holdFlowWithWaitingRetry(
      stack,
      tokens.bob,
      'bob',
      { title: 'Across the outage', body: 'z' },
      stack.secondUrl,
    );
    const mark = stack.logs.length;
    await proxy!.cut();
    await new Promise((r) => setTimeout(r, 1_500));
    await proxy!.restore();
    await new Promise((r) => setTimeout(r, 200));
    // The waiting call neither failed nor gave up while nobody listened: it still waits.
    expect(held.answered()).toBeUndefined();
    // Instance 2's listener lost its connection in the cut, and listens again by itself.
    const logged = () => stack.logs.slice(mark).join('');
    expect(logged()).toContain('completion listener lost its connection');
    await expect.poll(() => logged().includes('completion listener listening again'), { timeout: 10_000 }).toBe(true);

    const landed = Date.now();
    const callback = await held.run.browser.get(held.callbackUrl);
    expect(callback.text).toContain('Report Service is connected');
    const answer = await held.retry;
    expect(answer.status).toBe(200);
    expect(answer.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    // Woken by the signal, not by the 15 s bound.
    expect(Date.now() - landed).toBeLessThan(5_000);
    const receipts = await direct.query(
      "SELECT count(*)::int AS n FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.subject_sub = 'bob'",
    );
    expect(receipts.rows[0].n).toBe(1);
  });

  describe('a callback cut inside its transaction', () => {
    /** What the callback's transaction writes for a user, all or nothing. */
    const stored = async (login: string) => {
      const { rows } = await direct.query<{
        secrets: number;
        connections: number;
        verified: number;
        events: number;
      }>(
        `SELECT (SELECT count(*)::int FROM secrets WHERE subject_sub = $1 AND provider = 'reports') AS secrets,
                (SELECT count(*)::int FROM connections WHERE subject_sub = $1 AND provider = 'reports') AS connections,
                (SELECT count(*)::int FROM elicitation_navigations
                  WHERE subject_sub = $1 AND status NOT IN ('CREATED', 'USER_REVIEW', 'NAVIGATION_ACCEPTED', 'OUT_OF_BAND_PENDING', 'EXPIRED', 'DECLINED', 'CANCELLED')) AS verified,
                (SELECT count(*)::int FROM webhook_events e JOIN connections c ON c.id::text = e.data->>'connectionId'
                  WHERE e.type = 'connection.created' AND c.subject_sub = $1) AS events`,
        [login],
      );
      return rows[0]!;
    };
    const nothing = { secrets: 0, connections: 0, verified: 0, events: 0 };

    /** A flow of `login` up to the provider's redirect back to the callback, which is then sent with the cut armed. */
    const cutCallback = async (
      login: 'alice' | 'mallory',
      title: string,
      texts: readonly string[],
      forwardLast = false,
    ) => {
      const token = tokens[login];
      const args = { title, body: 'cut' };
      const elicited = await elicitConnection(stack, token, 'reports_create', args);
      const run = await openConnectLink(stack, elicited.url, login);
      const callbackUrl = await authorizeUpToCallback(run, login);
      const cut = proxy!.cutWhen(texts, { forwardLast });
      const page = await run.browser.get(callbackUrl);
      await cut;
      figures.cutPoints++;
      expectOutagePage(page);
      await proxy!.restore();
      await waitUntilReady(stack.brokerUrl);
      return { elicited, run, args, token };
    };

    it.each([
      // A first connection: the connection is recorded, then its tokens stored (there are no old ones to delete).
      ['the connection recorded', ['INSERT INTO connections']],
      ['the new tokens stored', ['INSERT INTO secrets']],
      ['the flow moved to verified', ['UPDATE elicitation_navigations']],
      ['the webhook event written', ['INSERT INTO webhook_events']],
      // The other instances are signalled by the flow's own UPDATE (migrations/0023_wake_waiters.sql), on COMMIT.
      ['the open sibling flows settled and signalled, just before COMMIT', ['INSERT INTO webhook_events', 'COMMIT']],
    ])('leaves nothing when cut at %s', async (what, texts) => {
      await cutCallback('alice', `Cut at ${what}`, texts);
      const after = await stored('alice');
      if (JSON.stringify(after) !== JSON.stringify(nothing)) figures.halfWritten++;
      expect(after).toEqual(nothing);
    });

    it('lets the user start over on the same link once Postgres is back, and the call then completes once', async () => {
      const { elicited, run, args, token } = await cutCallback('alice', 'Start over', ['INSERT INTO secrets']);
      expect(await stored('alice')).toEqual(nothing);
      // The provider's code was spent with the callback; the link leads to the provider again, where
      // the browser is still signed in and its grant remembered, so it comes straight back.
      const review = await run.browser.get(elicited.url);
      expect(review.status).toBe(200);
      const back = await run.browser.submitForm(review, {}, { form: '/connect/' });
      const done = back.text.includes('Report Service is connected')
        ? back
        : await run.browser.submitForm(back, {}, { form: '/confirm' });
      expect(done.text).toContain('Report Service is connected');
      expect(await stored('alice')).toMatchObject({ secrets: expect.any(Number), connections: 1, events: 1 });
      const answer = await retryConnection(stack, token, 'reports_create', args, elicited.requestState, 'accept');
      expect(answer.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
      const receipts = await direct.query(
        "SELECT count(*)::int AS n FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.subject_sub = 'alice'",
      );
      expect(receipts.rows[0].n).toBe(1);
    });

    it('stores all of it or none of it when the COMMIT reaches Postgres and its answer is lost', async () => {
      // Alice and bob are connected by now; mallory has nothing stored.
      expect(await stored('mallory')).toEqual(nothing);
      await cutCallback('mallory', 'Commit unanswered', ['INSERT INTO webhook_events', 'COMMIT'], true);
      const after = await stored('mallory');
      const all = after.secrets > 0 && after.connections === 1 && after.verified === 1 && after.events === 1;
      const none = JSON.stringify(after) === JSON.stringify(nothing);
      if (!all && !none) figures.halfWritten++;
      expect({ after, consistent: all || none }).toEqual({ after, consistent: true });
      console.log(`postgres outage: a COMMIT whose answer was lost ${all ? 'committed' : 'rolled back'}`);
    });
  });
});
