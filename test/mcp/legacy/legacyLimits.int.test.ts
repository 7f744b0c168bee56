import { UrlElicitationRequiredError } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { advance } from '../../../src/broker/advance.js';
import { findNavigationById } from '../../../src/broker/navigationRepo.js';
import { withTransaction } from '../../../src/db/transaction.js';
import type { BrokerStack } from '../../support/brokerStack.js';
import { exchange, type Exchange } from '../../support/legacyExchange.js';
import { closeLegacy, connectLegacy, type LegacyClient } from '../../support/legacySdkClient.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

// Legacy (2025-11-25) sessions and their streams used to be unbounded: any number of sessions per
// principal and in all, kept for an hour after their last use, streams without heartbeat or end,
// and a -32042 completion watcher per error that outlived its session.

const LEGACY = '2025-11-25';
const CAPS = { elicitation: { form: {}, url: {} } };

async function until<T>(what: string, probe: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

let nextId = 1;
const rpc = (method: string, params: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id: nextId++,
  method,
  params,
});

/** initialize and notifications/initialized on raw HTTP; the session id. */
async function rawSession(
  stack: BrokerStack,
  token: string,
): Promise<{ session: string; headers: Record<string, string> }> {
  const base = { accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
  const init = await exchange(
    stack,
    'POST',
    base,
    rpc('initialize', { protocolVersion: LEGACY, capabilities: CAPS, clientInfo: { name: 'raw', version: '1' } }),
  );
  await init.ended;
  const session = init.headers['mcp-session-id'];
  if (typeof session !== 'string') throw new Error(`initialize failed: ${init.status} ${init.text()}`);
  const headers = { ...base, 'mcp-session-id': session, 'mcp-protocol-version': LEGACY };
  await (
    await exchange(stack, 'POST', headers, { jsonrpc: '2.0', method: 'notifications/initialized' })
  ).ended;
  return { session, headers };
}

describe('legacy session limits', () => {
  const { stack, tokens } = useBrokerStack(
    {
      legacyUrlElicitation: 'error',
      legacyLimits: { maxSessions: 3, maxSessionsPerPrincipal: 2, watchersPerSession: 2 },
    },
    { users: ['alice', 'bob'] },
  );
  const open: LegacyClient[] = [];

  afterEach(async () => {
    for (const o of open.splice(0)) await closeLegacy(o);
  });

  const opened = async (token: string) => {
    const o = await connectLegacy(stack, token, {});
    open.push(o);
    return o;
  };

  it('refuses a principal a session past its cap with a clear error, and opens one again after DELETE', async () => {
    const first = await opened(tokens.alice);
    await opened(tokens.alice);
    const refused = await connectLegacy(stack, tokens.alice, {}).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    const raw = await exchange(
      stack,
      'POST',
      { accept: 'application/json, text/event-stream', authorization: `Bearer ${tokens.alice}` },
      rpc('initialize', { protocolVersion: LEGACY, capabilities: CAPS, clientInfo: { name: 'raw', version: '1' } }),
    );
    await raw.ended;
    expect([raw.status, raw.headers['retry-after'], raw.headers['mcp-session-id']]).toEqual([429, '60', undefined]);
    expect(raw.messages[0]?.error?.code).toBe(-32600);
    expect(refused?.message).toContain(
      'You have 2 open sessions, the most allowed: end one (HTTP DELETE with its Mcp-Session-Id)',
    );
    // Another principal is not held back by alice's sessions.
    await opened(tokens.bob);

    await first.transport.terminateSession();
    await first.client.close();
    open.splice(open.indexOf(first), 1);
    const again = await opened(tokens.alice);
    expect((await again.client.listTools()).tools.length).toBeGreaterThan(0);
  });

  it('refuses a session past the instance-wide cap', async () => {
    await opened(tokens.alice);
    await opened(tokens.alice);
    await opened(tokens.bob);
    const refused = await connectLegacy(stack, tokens.bob, {}).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(refused?.message).toContain('This server has as many open sessions as it allows');
  });

  it('keeps at most two -32042 completion watchers per session: the oldest stops', async () => {
    const legacy = await opened(tokens.alice);
    const ids: string[] = [];
    for (const title of ['Watch A', 'Watch B', 'Watch C']) {
      const err = await legacy.client.callTool({ name: 'reports_create', arguments: { title, body: 'x' } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UrlElicitationRequiredError);
      ids.push((err as UrlElicitationRequiredError).elicitations[0]!.elicitationId);
    }
    const [a, b, c] = ids as [string, string, string];
    // Completion as the callback proves it: the navigation reaches REQUIREMENT_VERIFIED and the signal goes out on commit.
    const verify = (navigationIds: string[]) =>
      withTransaction(stack.db.pool, async (tx) => {
        for (const id of navigationIds) {
          const navigation = (await findNavigationById(tx, id))!;
          const events = (['host_accept', 'browser_consent', 'callback_received', 'callback_verified'] as const).slice(
            navigation.status === 'USER_REVIEW' ? 0 : 1,
          );
          await advance(tx, navigation, [...events], { actor: 'test', now: new Date() });
          await tx.query(`SELECT pg_notify('navigation_verified', $1)`, [id]);
        }
      });
    await verify([a, c]);
    await until('the completion of C', () => legacy.completed.includes(c));
    await verify([b]);
    await until('the completion of B', () => legacy.completed.includes(b));
    expect(legacy.completed).toEqual([c, b]);
  });
});

describe('legacy SSE streams', () => {
  const { stack, tokens } = useBrokerStack(
    { legacyLimits: { heartbeatMs: 100, streamMaxMs: 1_500 } },
    { users: ['alice'] },
  );

  it('sends a heartbeat comment on an open GET stream, and ends the stream at its maximum lifetime while the session lives on', async () => {
    const { headers } = await rawSession(stack, tokens.alice);
    const started = Date.now();
    const stream: Exchange = await exchange(stack, 'GET', headers);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream');
    await until('a heartbeat', () => stream.text().includes(': heartbeat\n\n'), 5_000);
    await stream.ended;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(stream.text().match(/: heartbeat\n\n/g)!.length).toBeGreaterThanOrEqual(5);
    const ping = await exchange(stack, 'POST', headers, rpc('ping'));
    await ping.ended;
    expect(ping.status).toBe(200);
    await (
      await exchange(stack, 'DELETE', headers)
    ).ended;
  });
});

describe('idle legacy sessions', () => {
  const { stack, tokens } = useBrokerStack(
    { legacyUrlElicitation: 'nested', legacyWaitMs: 30_000, legacyLimits: { idleMs: 500 } },
    { users: ['alice'] },
  );

  it('ends a session idle past its limit: its GET stream ends, a call waiting on the client is answered, and the id is unknown', async () => {
    const { headers } = await rawSession(stack, tokens.alice);
    const stream = await exchange(stack, 'GET', headers);
    const call = await exchange(
      stack,
      'POST',
      headers,
      rpc('tools/call', { name: 'reports_create', arguments: { title: 'Idle', body: 'x' } }),
    );
    const ask = await call.next((m) => m.method === 'elicitation/create');
    expect(ask.params).toMatchObject({ mode: 'url' });
    // Nobody answers; the session sees no request from here on.
    await stream.ended;
    const answer = await call.next((m) => m.id !== undefined && m.id !== ask.id);
    expect(answer.error).toMatchObject({ code: -32000, message: expect.stringContaining('The session ended') });
    await call.ended;
    const after = await exchange(stack, 'POST', headers, rpc('ping'));
    await after.ended;
    expect(after.status).toBe(404);
  });
});
