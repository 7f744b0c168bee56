import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readMigrations } from '../../../src/db/migrate.js';
import { reportServiceProvider } from '../../../src/dev/devStack.js';
import { createOidcClient } from '../../../src/oauth/oauthClient.js';
import { parseProviders } from '../../../src/providers/providerConfig.js';
import { listenHttps } from '../../../src/runtime/httpsServer.js';
import { createBrokerServer, type BrokerServer } from '../../../src/server.js';
import { systemClock } from '../../../src/shared/clock.js';
import { createLogger } from '../../../src/shared/logger.js';
import { Secret } from '../../../src/shared/secret.js';
import { randomToken } from '../../../src/shared/tokens.js';
import { createRender } from '../../../src/web/render.js';
import type { BrokerStack } from '../../support/brokerStack.js';
import { consentAndAuthorize, openConnectLink } from '../../support/connectFlow.js';
import { reportsAt } from '../../support/forgedTokens.js';
import { exchange as rawExchange, type Exchange, type JsonRpc } from '../../support/legacyExchange.js';
import { createTestBrowser, type TestBrowser } from '../../support/testBrowser.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

// Lineage faults on the 2025-11-25 adapter, on raw HTTP: retries
// while a nested call is in flight, repeated -32042 retries, completion
// notifications that are duplicated or forged or come before consent, ended
// sessions, and the two lineages racing on two instances. Every test counts
// operation receipts (at most one per navigation) and reports at the Report
// Service (at most one per operation).

const LEGACY = '2025-11-25';
const CAPS = { elicitation: { form: {}, url: {} } };
const WAIT_MS = 1_500;

/** The faults file names the instance first. */
const exchangeAt = (stack: BrokerStack, baseUrl: string, method: 'GET' | 'POST' | 'DELETE', headers: Record<string, string>, body?: unknown) => rawExchange(stack, method, headers, body, baseUrl);

let nextId = 1;

/** A legacy session on one instance, driven by hand. */
interface Session {
  id: string;
  baseUrl: string;
  token: string;
  /** Starts a request; the exchange streams (SSE) or answers JSON. */
  start(method: string, params: Record<string, unknown>): Promise<Exchange & { requestId: number }>;
  /** Sends a message (notification or response) and reads the answer to its end. */
  send(message: Record<string, unknown>): Promise<Exchange>;
  /** Calls a tool and reads the exchange to its end. */
  call(name: string, args: object): Promise<{ exchange: Exchange; final: JsonRpc }>;
  /** Opens the standalone GET stream. */
  listen(): Promise<Exchange>;
  end(): Promise<number>;
}

async function initialize(stack: BrokerStack, token: string, baseUrl = stack.brokerUrl): Promise<Session> {
  const base = { accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
  const init = await exchangeAt(stack, baseUrl, 'POST', base, { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: CAPS, clientInfo: { name: 'legacy-faults', version: '1' } } });
  await init.ended;
  const id = init.headers['mcp-session-id'];
  if (init.status !== 200 || typeof id !== 'string') throw new Error(`initialize failed with ${init.status}`);
  const headers = { ...base, 'mcp-session-id': id, 'mcp-protocol-version': LEGACY };
  const session: Session = {
    id,
    baseUrl,
    token,
    async start(method, params) {
      const requestId = nextId++;
      const response = await exchangeAt(stack, baseUrl, 'POST', headers, { jsonrpc: '2.0', id: requestId, method, params });
      return Object.assign(response, { requestId });
    },
    async send(message) {
      const response = await exchangeAt(stack, baseUrl, 'POST', headers, { jsonrpc: '2.0', ...message });
      await response.ended;
      return response;
    },
    async call(name, args) {
      const response = await session.start('tools/call', { name, arguments: args });
      const final = await response.next((m) => m.id === response.requestId, WAIT_MS * 3);
      await response.ended;
      return { exchange: response, final };
    },
    listen: () => exchangeAt(stack, baseUrl, 'GET', { ...headers, accept: 'text/event-stream' }),
    async end() {
      const response = await exchangeAt(stack, baseUrl, 'DELETE', headers);
      await response.ended;
      return response.status;
    },
  };
  await session.send({ method: 'notifications/initialized' });
  return session;
}

const isElicitation = (m: JsonRpc) => m.method === 'elicitation/create';
const isCompletion = (m: JsonRpc) => m.method === 'notifications/elicitation/complete';
const elicitationIdOf = (m: JsonRpc) => m.params?.['elicitationId'] as string;
const reportOf = (m: JsonRpc) => (m.result?.['structuredContent'] as { report?: { id: string } } | undefined)?.report?.id;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** alice consents and authorizes at the Report Service; her browser stops before delivering the callback. */
async function authorizeUntilCallback(stack: BrokerStack, url: string): Promise<{ browser: TestBrowser; callbackUrl: string }> {
  const browser = createTestBrowser({ fetch: stack.fetch, stopAt: (u) => u.pathname === '/oauth/callback/reports' });
  const stopped = await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice', browser), 'alice');
  if (!stopped.location?.startsWith(`${stack.brokerUrl}/oauth/callback/reports?`)) throw new Error(`the browser did not reach the callback: ${stopped.status} ${stopped.url}`);
  return { browser, callbackUrl: stopped.location };
}

/** Error-level log lines (pino level 50 and up): an unexposed failure inside the broker. */
function internalErrors(stack: BrokerStack): string[] {
  return stack.logs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
}

async function completeInBrowser(stack: BrokerStack, url: string): Promise<void> {
  const done = await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice'), 'alice');
  if (!done.url.startsWith(`${stack.brokerUrl}/connect/done`)) throw new Error(`the browser flow did not complete: ${done.status} ${done.url}`);
}

function ledger(stack: BrokerStack) {
  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  return {
    query,
    status: async (navigationId: string) => (await query('SELECT status FROM elicitation_navigations WHERE id = $1', [navigationId]))[0]?.status as string | undefined,
    events: async (navigationId: string) => query('SELECT event, from_status, to_status FROM navigation_events WHERE navigation_id = $1 ORDER BY id', [navigationId]),
    receiptsOf: async (navigationId: string) => query('SELECT lineage, jsonrpc_id, retry_generation, outcome_status FROM operation_receipts WHERE navigation_id = $1', [navigationId]),
    /** Receipts per navigation, over every navigation. */
    receiptsPerNavigation: async () => (await query('SELECT navigation_id, count(*)::int AS n FROM operation_receipts GROUP BY navigation_id')).map((r) => r.n as number),
    /** Receipts accepted since `mark()`. */
    newReceipts: async (mark: number) => ((await query('SELECT count(*)::int AS n FROM operation_receipts'))[0].n as number) - mark,
    mark: async () => (await query('SELECT count(*)::int AS n FROM operation_receipts'))[0].n as number,
    /** Polls until the navigation is in `status` (host answers are applied after their 202). */
    until: async (navigationId: string, status: string) => {
      for (let i = 0; i < 200 && (await query('SELECT status FROM elicitation_navigations WHERE id = $1', [navigationId]))[0]?.status !== status; i++) await sleep(10);
    },
    reportsTitled: async (title: string) => (await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === title),
  };
}

describe('legacy lineage faults: nested (LEGACY_URL_ELICITATION=nested)', () => {
  const { stack, tokens } = useBrokerStack({ legacyWaitMs: WAIT_MS }, { users: ['alice'] });
  let db: ReturnType<typeof ledger>;

  beforeAll(async () => {
    db = ledger(stack);
  });
  afterEach(async () => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
    // Each test connects alice from scratch.
    await stack.db.pool.query('DELETE FROM secrets');
  });

  it('does not let a retry sent while the nested call waits for the user cause a second effect', async () => {
    const args = { title: 'Nested, retried early', body: 'b' };
    const mark = await db.mark();
    const session = await initialize(stack, tokens.alice);
    const original = await session.start('tools/call', { name: 'reports_create', arguments: args });
    const asked = await original.next(isElicitation);
    await session.send({ id: asked.id, result: { action: 'accept' } });

    // The host retries (same tool and arguments, new id) while the original is in flight: it joins the
    // original operation (no second link, no second effect) and answers its recorded outcome.
    // (Its answer opens only when it has one, so it is not awaited before the browser part.)
    const retrying = session.start('tools/call', { name: 'reports_create', arguments: args });
    await sleep(100);

    await completeInBrowser(stack, asked.params!['url'] as string);
    const first = await original.next((m) => m.id === original.requestId);
    const retry = await retrying;
    const second = await retry.next((m) => m.id === retry.requestId, WAIT_MS * 3);

    expect(first.result, JSON.stringify(first.result)).toMatchObject({ structuredContent: { status: 'created' } });
    expect(reportOf(second)).toBe(reportOf(first));
    expect(retry.messages.filter(isElicitation)).toEqual([]);
    expect(original.messages.filter(isCompletion)).toEqual([expect.objectContaining({ params: { elicitationId: elicitationIdOf(asked) } })]);
    expect(retry.messages.filter(isCompletion)).toEqual([]);
    expect(await db.receiptsOf(elicitationIdOf(asked))).toEqual([expect.objectContaining({ lineage: 'nested', jsonrpc_id: String(original.requestId) })]);
    expect(await db.newReceipts(mark)).toBe(1);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
  });

  it('does not let a retry sent after the browser completed, while the nested call still waits for the host, create a second report', async () => {
    const args = { title: 'Nested, retried after the browser', body: 'b' };
    const mark = await db.mark();
    const session = await initialize(stack, tokens.alice);
    const original = await session.start('tools/call', { name: 'reports_create', arguments: args });
    const asked = await original.next(isElicitation);
    // The user finishes in the browser before the host has answered the elicitation.
    await completeInBrowser(stack, asked.params!['url'] as string);
    expect(await db.status(elicitationIdOf(asked))).toBe('REQUIREMENT_VERIFIED');

    // The host retries the in-flight call, then answers the original elicitation.
    const retrying = session.call('reports_create', args);
    await sleep(100);
    await session.send({ id: asked.id, result: { action: 'accept' } });
    const first = await original.next((m) => m.id === original.requestId);
    await original.ended;
    const retry = await retrying;
    expect(reportOf(retry.final)).toBe(reportOf(first));

    const created = new Set([reportOf(first), reportOf(retry.final)].filter((id) => id !== undefined));
    const reports = await db.reportsTitled(args.title);
    expect(
      { created: created.size, reports: reports.length, receipts: await db.receiptsOf(elicitationIdOf(asked)), newReceipts: await db.newReceipts(mark) },
      `the original answered ${JSON.stringify(first.result?.['structuredContent'])}, the retry ${JSON.stringify(retry.final.result?.['structuredContent'])}`,
    ).toEqual({ created: 1, reports: 1, receipts: [expect.objectContaining({ lineage: 'nested', jsonrpc_id: String(original.requestId) })], newReceipts: 1 });
    expect((await db.receiptsPerNavigation()).every((n) => n <= 1)).toBe(true);
  });

  it('advances nothing on an elicitation/complete notification posted by the client', async () => {
    const args = { title: 'Forged completion', body: 'b' };
    const mark = await db.mark();
    const session = await initialize(stack, tokens.alice);
    const original = await session.start('tools/call', { name: 'reports_create', arguments: args });
    const asked = await original.next(isElicitation);
    const navigationId = elicitationIdOf(asked);
    await session.send({ id: asked.id, result: { action: 'accept' } });
    await db.until(navigationId, 'NAVIGATION_ACCEPTED');
    const before = await db.events(navigationId);

    const forged = await session.send({ method: 'notifications/elicitation/complete', params: { elicitationId: navigationId } });
    expect(forged.status).toBe(202);
    // ...and a second answer to the same elicitation, as if it meant "done".
    const again = await session.send({ id: asked.id, result: { action: 'accept' } });
    expect(again.status).toBe(202);

    const final = await original.next((m) => m.id === original.requestId, WAIT_MS * 3);
    expect(final.result).toMatchObject({ isError: true });
    expect(original.messages.filter(isCompletion)).toEqual([]);
    expect(await db.events(navigationId)).toEqual(before);
    expect(await db.status(navigationId)).toBe('NAVIGATION_ACCEPTED');
    expect(await db.newReceipts(mark)).toBe(0);
    expect(await db.reportsTitled(args.title)).toEqual([]);
  });

  it('advances nothing on a callback that arrives before consent, and the nested call does not continue', async () => {
    const args = { title: 'Callback before consent', body: 'b' };
    const mark = await db.mark();
    const session = await initialize(stack, tokens.alice);
    const original = await session.start('tools/call', { name: 'reports_create', arguments: args });
    const asked = await original.next(isElicitation);
    const navigationId = elicitationIdOf(asked);
    await session.send({ id: asked.id, result: { action: 'accept' } });
    await db.until(navigationId, 'NAVIGATION_ACCEPTED');
    // alice is on the review page, has not consented, and a callback lands.
    const run = await openConnectLink(stack, asked.params!['url'] as string, 'alice');
    const before = [await db.status(navigationId), await db.events(navigationId)];
    const early = new URL('/oauth/callback/reports', stack.brokerUrl);
    early.search = new URLSearchParams({ code: randomToken(), state: randomToken(), iss: stack.dev.reports.issuer }).toString();
    const page = await run.browser.get(early.href);

    expect(page.status).toBe(400);
    expect([await db.status(navigationId), await db.events(navigationId)]).toEqual(before);
    const final = await original.next((m) => m.id === original.requestId, WAIT_MS * 3);
    expect(final.result).toMatchObject({ isError: true });
    expect(original.messages.filter(isCompletion)).toEqual([]);
    expect(await db.newReceipts(mark)).toBe(0);
    expect(await db.reportsTitled(args.title)).toEqual([]);
  });

  it('sends no notification to, and accepts nothing for, a nested call whose session was ended while it waited', async () => {
    const args = { title: 'Ended session, nested', body: 'b' };
    const mark = await db.mark();
    const session = await initialize(stack, tokens.alice);
    const original = await session.start('tools/call', { name: 'reports_create', arguments: args });
    const asked = await original.next(isElicitation);
    const navigationId = elicitationIdOf(asked);
    await session.send({ id: asked.id, result: { action: 'accept' } });
    expect(await session.end()).toBe(204);

    await completeInBrowser(stack, asked.params!['url'] as string);
    await Promise.race([original.ended, sleep(WAIT_MS + 1_000)]);
    original.close();

    // One assertion, so that a failure shows everything the ended session's call still did.
    expect({
      notified: original.messages.filter(isCompletion),
      succeeded: original.messages.filter((m) => m.id === original.requestId && m.result !== undefined && m.result['isError'] !== true),
      receipts: await db.receiptsOf(navigationId),
      reports: await db.reportsTitled(args.title),
      newReceipts: await db.newReceipts(mark),
    }).toEqual({ notified: [], succeeded: [], receipts: [], reports: [], newReceipts: 0 });
    expect((await session.send({ method: 'notifications/initialized' })).status).toBe(404);
    expect((await session.start('tools/call', { name: 'reports_list', arguments: {} })).status).toBe(404);
  });

  it('lets a nested operation whose call gave up be finished by calling again after connecting, once', async () => {
    const args = { title: 'Nested, gave up, recovered', body: 'b' };
    const mark = await db.mark();
    const session = await initialize(stack, tokens.alice);
    const original = await session.start('tools/call', { name: 'reports_create', arguments: args });
    const asked = await original.next(isElicitation);
    await session.send({ id: asked.id, result: { action: 'accept' } });
    // Nobody finishes in time: the call ends clearly, the flow stays recoverable.
    const gaveUp = await original.next((m) => m.id === original.requestId, WAIT_MS * 3);
    expect(gaveUp.result).toMatchObject({ isError: true });
    expect(await db.newReceipts(mark)).toBe(0);

    await completeInBrowser(stack, asked.params!['url'] as string);
    const again = await session.call('reports_create', args);
    const third = await session.call('reports_create', args);
    expect(again.final.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(reportOf(third.final)).toBe(reportOf(again.final));
    expect(await db.receiptsOf(elicitationIdOf(asked))).toEqual([expect.objectContaining({ lineage: 'nested' })]);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
  });

  describe('with a second instance that answers -32042 (a mixed LEGACY_URL_ELICITATION rollout)', () => {
    let errorInstance: { url: string; close(): Promise<void> };

    beforeAll(async () => {
      errorInstance = await startErrorInstance(stack);
    });
    afterAll(async () => {
      await errorInstance?.close();
    });

    it('leaves at most one receipt per navigation and one report when a nested request and a -32042 retry race for the same operation', async () => {
      const args = { title: 'Nested versus -32042', body: 'b' };
      const mark = await db.mark();
      const nested = await initialize(stack, tokens.alice);
      const viaError = await initialize(stack, tokens.alice, errorInstance.url);

      // Instance 1 asks on the call's stream; the host accepts.
      const original = await nested.start('tools/call', { name: 'reports_create', arguments: args });
      const asked = await original.next(isElicitation);
      await nested.send({ id: asked.id, result: { action: 'accept' } });
      // The same operation on the -32042 instance joins the nested one (no second link, no second effect).
      const joining = viaError.call('reports_create', args);

      // The user completes the nested link; the -32042 host retries as the callback lands, racing the nested continuation.
      const { browser, callbackUrl } = await authorizeUntilCallback(stack, asked.params!['url'] as string);
      expect((await browser.get(callbackUrl)).status).toBe(200);
      const retried = await viaError.call('reports_create', args);
      const first = await original.next((m) => m.id === original.requestId);
      await original.ended;
      const joined = await joining;
      expect(joined.final.error).toBeUndefined();

      const created = new Set([reportOf(first), reportOf(retried.final), reportOf(joined.final)].filter((id) => id !== undefined));
      const reports = await db.reportsTitled(args.title);
      expect(
        { created: created.size, reports: reports.length, newReceipts: await db.newReceipts(mark) },
        `nested answered ${JSON.stringify(first.result?.['structuredContent'] ?? first.error)}; the -32042 retry ${JSON.stringify(retried.final.result?.['structuredContent'] ?? retried.final.error)}`,
      ).toEqual({ created: 1, reports: 1, newReceipts: 1 });
      expect((await db.receiptsPerNavigation()).every((n) => n <= 1)).toBe(true);
    });
  });
});

describe('legacy lineage faults: -32042 (LEGACY_URL_ELICITATION=error)', () => {
  const { stack, tokens } = useBrokerStack({ legacyUrlElicitation: 'error', legacyWaitMs: WAIT_MS }, { users: ['alice'] });
  let db: ReturnType<typeof ledger>;

  beforeAll(async () => {
    db = ledger(stack);
  });
  afterEach(async () => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
    await stack.db.pool.query('DELETE FROM secrets');
  });

  async function required(session: Session, args: object): Promise<{ elicitationId: string; url: string }> {
    const { final } = await session.call('reports_create', args);
    expect(final.error).toMatchObject({ code: -32042 });
    const [elicitation] = (final.error?.data as { elicitations: { elicitationId: string; url: string }[] }).elicitations;
    return elicitation!;
  }

  it('creates one report when the -32042 flow is retried twice, including two retries racing on two instances', async () => {
    const args = { title: 'Retried twice', body: 'b' };
    const mark = await db.mark();
    const one = await initialize(stack, tokens.alice);
    const two = await initialize(stack, tokens.alice, stack.secondUrl);
    const { elicitationId, url } = await required(one, args);
    await completeInBrowser(stack, url);

    const [a, b] = await Promise.all([one.call('reports_create', args), two.call('reports_create', args)]);
    const c = await one.call('reports_create', args);

    const ids = [a, b, c].map((r) => reportOf(r.final));
    expect(ids[0], JSON.stringify(a.final)).toBeDefined();
    expect(new Set(ids)).toEqual(new Set([ids[0]]));
    expect(await db.status(elicitationId)).toBe('RETRY_RESPONSE_ACCEPTED');
    expect(await db.receiptsOf(elicitationId)).toEqual([expect.objectContaining({ lineage: 'error_retry', outcome_status: 'succeeded' })]);
    expect(await db.newReceipts(mark)).toBe(1);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
  });

  it('sends the completion notification once, and not again for a replayed callback', async () => {
    const args = { title: 'Duplicate completion', body: 'b' };
    const mark = await db.mark();
    const session = await initialize(stack, tokens.alice);
    const stream = await session.listen();
    expect(stream.status).toBe(200);
    const { elicitationId, url } = await required(session, args);

    const { browser, callbackUrl } = await authorizeUntilCallback(stack, url);
    expect((await browser.get(callbackUrl)).status).toBe(200);
    await stream.next(isCompletion);
    const replay = await browser.get(callbackUrl);
    expect(replay.status).toBe(400);
    // A replacement GET stream is not told again either.
    const replacement = await session.listen();
    await sleep(300);

    expect(stream.messages).toEqual([{ jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId } }]);
    expect(replacement.messages).toEqual([]);
    expect((await db.events(elicitationId)).filter((e) => e.event === 'callback_verified')).toHaveLength(1);
    replacement.close();
    stream.close();

    const retried = await session.call('reports_create', args);
    expect(retried.final.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(await db.newReceipts(mark)).toBe(1);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
  });

  it('does not make a -32042 retry eligible on an elicitation/complete notification posted by the client', async () => {
    const args = { title: 'Forged completion, -32042', body: 'b' };
    const mark = await db.mark();
    const session = await initialize(stack, tokens.alice);
    const { elicitationId } = await required(session, args);
    const before = await db.events(elicitationId);

    expect((await session.send({ method: 'notifications/elicitation/complete', params: { elicitationId } })).status).toBe(202);
    const retried = await session.call('reports_create', args);

    expect(retried.final.error).toMatchObject({ code: -32042 });
    expect(await db.events(elicitationId)).toEqual(before);
    expect(await db.status(elicitationId)).toBe('USER_REVIEW');
    expect(await db.newReceipts(mark)).toBe(0);
    expect(await db.reportsTitled(args.title)).toEqual([]);
  });

  it('sends no notification to an ended session, which cannot be used, and accepts the retry from a new session once', async () => {
    const args = { title: 'Ended session, -32042', body: 'b' };
    const mark = await db.mark();
    const old = await initialize(stack, tokens.alice);
    const oldStream = await old.listen();
    const { elicitationId, url } = await required(old, args);
    expect(await old.end()).toBe(204);
    await Promise.race([oldStream.ended, sleep(2_000)]);

    const fresh = await initialize(stack, tokens.alice);
    const freshStream = await fresh.listen();
    await completeInBrowser(stack, url);
    await sleep(300);

    expect(oldStream.messages).toEqual([]);
    // The notification goes only to the session that got the elicitation.
    expect(freshStream.messages).toEqual([]);
    const reused = await old.start('tools/call', { name: 'reports_create', arguments: args });
    await reused.ended;
    expect(reused.status).toBe(404);
    expect(await db.newReceipts(mark)).toBe(0);

    const retried = await fresh.call('reports_create', args);
    expect(retried.final.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(await db.receiptsOf(elicitationId)).toHaveLength(1);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
    oldStream.close();
    freshStream.close();
  });
});

/**
 * A third broker instance on the stack's database, keys and MCP audience,
 * configured LEGACY_URL_ELICITATION=error (brokerStack configures both of its
 * instances alike). Its own public URL: its connect links are not completed here.
 */
async function startErrorInstance(stack: BrokerStack): Promise<{ url: string; close(): Promise<void> }> {
  // The listener needs the server, the server needs the port: the server is set once the port is known.
  const holder: { server?: BrokerServer } = {};
  const running = await listenHttps(stack.tls, (req, res) => (holder.server ? holder.server.listener(req, res) : res.writeHead(503).end()), '127.0.0.1', 0, 'broker 3 (error lineage)');
  const url = `https://127.0.0.1:${running.port}`;
  const server = createBrokerServer({
    pool: stack.db.newPool(),
    logger: createLogger({ level: 'silent' }),
    clock: systemClock,
    render: createRender({ cache: false }),
    oidc: createOidcClient({ issuer: stack.dev.idp.issuer, clientId: stack.dev.idp.brokerClientId, clientSecret: new Secret(stack.secrets.brokerIdpClientSecret), fetch: stack.fetch, allowLoopback: true }),
    migrations: await readMigrations(),
    publicUrl: new URL(url),
    mcpResourceUrl: stack.mcpResourceUrl,
    sessionTtlSeconds: 3600,
    issuer: stack.dev.idp.issuer,
    fetch: stack.fetch,
    secretKeys: stack.secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
    mcpScope: 'mcp',
    anonymousPrincipal: undefined,
    version: 'test',
    providers: parseProviders([reportServiceProvider(stack.dev, stack.secrets)], { allowLoopback: true }),
    allowLoopback: true,
    navigationTtlSeconds: 900,
    retryWaitMs: 2_000,
    legacy: { urlElicitation: 'error', waitMs: WAIT_MS, retryWindowMs: 600_000 },
  });
  holder.server = server;
  return {
    url,
    async close() {
      await running.close(0);
      await server.close();
    },
  };
}
