import { Writable } from 'node:stream';
import { createPool } from '../../src/db/pool.js';
import { afterEach, expect } from 'vitest';
import { readMigrations } from '../../src/db/migrate.js';
import { reportServiceProvider } from '../../src/dev/devStack.js';
import { createOidcClient } from '../../src/oauth/oauthClient.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { listenHttps } from '../../src/runtime/httpsServer.js';
import { createBrokerServer, type BrokerServer } from '../../src/server.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { createRender } from '../../src/web/render.js';
import type { BrokerStack, BrokerStackOptions } from './brokerStack.js';
import { consentAndAuthorize, openConnectLink } from './connectFlow.js';
import { reportsAt } from './forgedTokens.js';
import { exchange as rawExchange, type Exchange, type JsonRpc } from './legacyExchange.js';
import { internalErrors } from './legacySdkClient.js';
import { createTestBrowser, type TestBrowser } from './testBrowser.js';
import { atUrl } from './testSettings.js';
import { useBrokerStack } from './useBrokerStack.js';
import { TEST_SELF } from './brokerSelf.js';

// The harness of test/mcp/legacy/legacyLineageFaults.int.test.ts: alice's legacy sessions driven
// by hand on raw HTTP, her reports_create up to its URL elicitation (nested) or its -32042, the
// ledger rows the tests count, and a third broker instance that answers -32042.

const LEGACY = '2025-11-25';
const CAPS = { elicitation: { form: {}, url: {} } };
/** LEGACY_WAIT_MS of the fault stacks: how long a nested call waits for the user. */
export const WAIT_MS = 1_500;

/** A session lives on one instance: the instance comes first. */
const exchangeAt = (
  stack: BrokerStack,
  baseUrl: string,
  method: 'GET' | 'POST' | 'DELETE',
  headers: Record<string, string>,
  body?: unknown,
) => rawExchange(stack, method, headers, body, baseUrl);

let nextId = 1;

/** A legacy session on one instance, driven by hand. */
export interface Session {
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

export async function initialize(stack: BrokerStack, token: string, baseUrl = stack.brokerUrl): Promise<Session> {
  const base = { accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
  const init = await exchangeAt(stack, baseUrl, 'POST', base, {
    jsonrpc: '2.0',
    id: nextId++,
    method: 'initialize',
    params: { protocolVersion: LEGACY, capabilities: CAPS, clientInfo: { name: 'legacy-faults', version: '1' } },
  });
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
      const response = await exchangeAt(stack, baseUrl, 'POST', headers, {
        jsonrpc: '2.0',
        id: requestId,
        method,
        params,
      });
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

export const isElicitation = (m: JsonRpc) => m.method === 'elicitation/create';
export const isCompletion = (m: JsonRpc) => m.method === 'notifications/elicitation/complete';
export const elicitationIdOf = (m: JsonRpc) => m.params?.['elicitationId'] as string;
export const reportOf = (m: JsonRpc) =>
  (m.result?.['structuredContent'] as { report?: { id: string } } | undefined)?.report?.id;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** alice consents and authorizes at the Report Service; her browser stops before delivering the callback. */
export async function authorizeUntilCallback(
  stack: BrokerStack,
  url: string,
): Promise<{ browser: TestBrowser; callbackUrl: string }> {
  const browser = createTestBrowser({ fetch: stack.fetch, stopAt: (u) => u.pathname === '/oauth/callback/reports' });
  const stopped = await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice', browser), 'alice');
  if (!stopped.location?.startsWith(`${stack.brokerUrl}/oauth/callback/reports?`))
    throw new Error(`the browser did not reach the callback: ${stopped.status} ${stopped.url}`);
  return { browser, callbackUrl: stopped.location };
}

export async function completeInBrowser(stack: BrokerStack, url: string): Promise<void> {
  const done = await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice'), 'alice');
  if (!done.url.startsWith(`${stack.brokerUrl}/connect/done`))
    throw new Error(`the browser flow did not complete: ${done.status} ${done.url}`);
}

export function ledger(stack: BrokerStack) {
  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  return {
    query,
    status: async (navigationId: string) =>
      (await query('SELECT status FROM elicitation_navigations WHERE id = $1', [navigationId]))[0]?.status as
        string | undefined,
    events: async (navigationId: string) =>
      query('SELECT event, from_status, to_status FROM navigation_events WHERE navigation_id = $1 ORDER BY id', [
        navigationId,
      ]),
    receiptsOf: async (navigationId: string) =>
      query(
        'SELECT lineage, jsonrpc_id, retry_generation, outcome_status FROM operation_receipts WHERE navigation_id = $1',
        [navigationId],
      ),
    /** Receipts per navigation, over every navigation. */
    receiptsPerNavigation: async () =>
      (await query('SELECT navigation_id, count(*)::int AS n FROM operation_receipts GROUP BY navigation_id')).map(
        (r) => r.n as number,
      ),
    /** Receipts accepted since `mark()`. */
    newReceipts: async (mark: number) =>
      ((await query('SELECT count(*)::int AS n FROM operation_receipts'))[0].n as number) - mark,
    mark: async () => (await query('SELECT count(*)::int AS n FROM operation_receipts'))[0].n as number,
    /** Polls until the navigation is in `status` (host answers are applied after their 202). */
    until: async (navigationId: string, status: string) => {
      for (
        let i = 0;
        i < 200 &&
        (await query('SELECT status FROM elicitation_navigations WHERE id = $1', [navigationId]))[0]?.status !== status;
        i++
      )
        await sleep(10);
    },
    reportsTitled: async (title: string) => (await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === title),
  };
}

export type Ledger = ReturnType<typeof ledger>;

/** alice's reports_create, called on a legacy session, as far as its first answer. */
export interface Call {
  args: { title: string; body: string };
  /** The receipts before the call (for `db.newReceipts`). */
  mark: number;
  session: Session;
  /** The host calls the same tool with the same arguments again (a new id), on `on`, and reads the answer to its end. */
  again(on?: Session): Promise<{ exchange: Exchange; final: JsonRpc }>;
  /** The same call again, as far as its answer opening (a stream may carry it later, a 404 at once). */
  startAgain(on?: Session): Promise<Exchange & { requestId: number }>;
}

/** Called nested: the call's stream carries the URL elicitation and stays open for its answer. */
export interface NestedCall extends Call {
  original: Exchange & { requestId: number };
  /** The elicitation/create on the call's stream. */
  asked: JsonRpc;
  navigationId: string;
  /** The connect link it asks alice to open. */
  url: string;
  /** The host accepts the elicitation (its answer, POSTed on the session). */
  accept(): Promise<Exchange>;
  /** The original call's answer, on its stream. */
  answer(timeoutMs?: number): Promise<JsonRpc>;
}

/** Answered -32042 (URL elicitation required). */
export interface ErrorCall extends Call {
  elicitationId: string;
  url: string;
}

/** The -32042 error of a reports_create that needs alice to connect: its one URL elicitation. */
export async function required(session: Session, args: object): Promise<{ elicitationId: string; url: string }> {
  const { final } = await session.call('reports_create', args);
  expect(final.error).toMatchObject({ code: -32042 });
  const [elicitation] = (final.error?.data as { elicitations: { elicitationId: string; url: string }[] }).elicitations;
  return elicitation!;
}

/**
 * A broker stack for a describe, alice signed in, and the first steps of its scenarios. After each
 * test: no internal error was logged, and alice's connection is forgotten (each test connects her
 * from scratch).
 */
export function useFaultStack(options: BrokerStackOptions) {
  const { stack, tokens } = useBrokerStack(options, { users: ['alice'] });
  const db: Ledger = ledger(stack);
  afterEach(async () => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
    await stack.db.pool.query('DELETE FROM secrets');
  });

  /** A new legacy session of alice's on `baseUrl` (the stack's first instance unless named). */
  const aliceSession = (baseUrl?: string) => initialize(stack, tokens.alice, baseUrl);

  async function call(title: string, on: Session | undefined): Promise<Call> {
    const args = { title, body: 'b' };
    const mark = await db.mark();
    const session = on ?? (await aliceSession());
    return {
      args,
      mark,
      session,
      again: (other = session) => other.call('reports_create', args),
      startAgain: (other = session) => other.start('tools/call', { name: 'reports_create', arguments: args }),
    };
  }

  /** alice's reports_create titled `title` on `on` (a new session unless given), up to the URL elicitation on the call's stream. */
  async function nestedCall(title: string, on?: Session): Promise<NestedCall> {
    const started = await call(title, on);
    const original = await started.session.start('tools/call', { name: 'reports_create', arguments: started.args });
    const asked = await original.next(isElicitation);
    return {
      ...started,
      original,
      asked,
      navigationId: elicitationIdOf(asked),
      url: asked.params!['url'] as string,
      accept: () => started.session.send({ id: asked.id, result: { action: 'accept' } }),
      answer: (timeoutMs) => original.next((m) => m.id === original.requestId, timeoutMs),
    };
  }

  /** alice's reports_create titled `title` on `on` (a new session unless given), answered -32042. */
  async function errorCall(title: string, on?: Session): Promise<ErrorCall> {
    const started = await call(title, on);
    return { ...started, ...(await required(started.session, started.args)) };
  }

  return { stack, db, aliceSession, nestedCall, errorCall };
}

/** Another broker instance on the stack's database, keys and MCP audience, with its own pool and logs. */
export interface ExtraInstance {
  url: string;
  port: number;
  /** What it logged (info level and up). */
  logs: string[];
  /** Stops it as main.ts stops a broker: legacy sessions ended, the listener after a grace period, the server, its pool. */
  close(): Promise<void>;
}

/**
 * A third broker instance with the stack's settings but `legacy` overridden, on its own URL (on `port`
 * when given: a restart of an instance that was there before, whose connect links open on it again).
 */
export async function startExtraInstance(
  stack: BrokerStack,
  options: { legacy: Partial<BrokerStack['settings']['legacy']>; port?: number; name?: string },
): Promise<ExtraInstance> {
  // The listener needs the server, the server needs the port: the server is set once the port is known.
  const holder: { server?: BrokerServer } = {};
  const running = await listenHttps(
    stack.tls,
    (req, res) => (holder.server ? holder.server.listener(req, res) : res.writeHead(503).end()),
    '127.0.0.1',
    options.port ?? 0,
    options.name ?? 'broker 3',
  );
  const url = `https://127.0.0.1:${running.port}`;
  const { settings } = stack;
  const logs: string[] = [];
  // Its own pool, outside the test database's (which ends its pools when dropped): ended by close().
  const pool = createPool(
    { url: stack.db.url, poolMax: 5, schema: stack.db.schema },
    createLogger({ level: 'silent' }),
  );
  const server = createBrokerServer({
    settings: atUrl(
      { ...settings, legacy: { ...settings.legacy, ...options.legacy } },
      new URL(url),
      stack.mcpResourceUrl,
    ),
    pool,
    logger: createLogger(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logs.push(chunk.toString('utf8'));
          done();
        },
      }),
    ),
    clock: systemClock,
    render: createRender({ cache: false }),
    oidc: createOidcClient({
      issuer: stack.dev.idp.issuer,
      clientId: stack.dev.idp.brokerClientId,
      clientSecret: new Secret(stack.secrets.brokerIdpClientSecret),
      fetch: stack.fetch,
      allowLoopback: true,
    }),
    migrations: await readMigrations(),
    issuer: stack.dev.idp.issuer,
    fetch: stack.fetch,
    secretKeys: stack.secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
    version: 'test',
    providers: parseProviders([reportServiceProvider(stack.dev, stack.secrets)], {
      allowLoopback: true,
      self: TEST_SELF,
    }),
    allowLoopback: true,
  });
  holder.server = server;
  return {
    url,
    port: running.port,
    logs,
    async close() {
      server.endSessions();
      await running.close(2_000);
      await server.close();
      await pool.end();
    },
  };
}

/**
 * A third broker instance on the stack's database, keys, MCP audience and
 * settings, but LEGACY_URL_ELICITATION=error (brokerStack configures both of its
 * instances alike). Its own public URL: its connect links are not completed here.
 */
export async function startErrorInstance(stack: BrokerStack): Promise<{ url: string; close(): Promise<void> }> {
  return startExtraInstance(stack, {
    legacy: { urlElicitation: 'error', waitMs: WAIT_MS },
    name: 'broker 3 (error lineage)',
  });
}
