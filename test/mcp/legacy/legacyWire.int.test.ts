import { describe, expect, it } from 'vitest';
import type { BrokerStack } from '../../support/brokerStack.js';
import { exchange, type Exchange } from '../../support/legacyExchange.js';
import { meta } from '../../support/mcpWire.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

// The 2025-11-25 wire rules of the legacy adapter on /mcp, on raw HTTP
// (MCP 2025-11-25 Streamable HTTP, Session Management): initialize starts a session, every later message carries
// it, GET opens the standalone stream, DELETE ends the session; a message with
// the modern `_meta` envelope is still served statelessly.

const LEGACY = '2025-11-25';
const CAPS = { elicitation: { form: {}, url: {} } };

/** A POST read to its end. */
async function post(
  stack: BrokerStack,
  token: string,
  body: unknown,
  options: { session?: string; headers?: Record<string, string>; baseUrl?: string } = {},
): Promise<Exchange> {
  const headers: Record<string, string> = {
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
    ...(options.session ? { 'mcp-session-id': options.session, 'mcp-protocol-version': LEGACY } : {}),
    ...options.headers,
  };
  const response = await exchange(stack, 'POST', headers, body, options.baseUrl);
  await response.ended;
  return response;
}

let nextId = 1;
const rpc = (method: string, params: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id: nextId++,
  method,
  params,
});

async function initialize(
  stack: BrokerStack,
  token: string,
  protocolVersion = LEGACY,
  baseUrl?: string,
): Promise<{ session: string; response: Exchange }> {
  const response = await post(
    stack,
    token,
    rpc('initialize', {
      protocolVersion,
      capabilities: CAPS,
      clientInfo: { name: 'legacy-wire-test', version: '1.0.0' },
    }),
    { ...(baseUrl ? { baseUrl } : {}) },
  );
  const session = response.headers['mcp-session-id'];
  if (response.status !== 200 || typeof session !== 'string')
    throw new Error(`initialize failed: ${response.status} ${response.text()}`);
  await post(
    stack,
    token,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { session, ...(baseUrl ? { baseUrl } : {}) },
  );
  return { session, response };
}

describe('the 2025-11-25 legacy wire on /mcp', () => {
  const { stack, tokens } = useBrokerStack({ legacyWaitMs: 1_000 }, { users: ['alice', 'bob'] });

  it('echoes a null id for a client response whose id is not a JSON-RPC id (found by the fuzzer)', async () => {
    const response = await post(stack, tokens.alice, { jsonrpc: '2.0', id: 1.5, error: {} });
    expect(response.status).toBe(400);
    expect(response.messages[0]).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('starts a session on initialize with a long visible-ASCII Mcp-Session-Id that is new on every initialize', async () => {
    const first = await initialize(stack, tokens.alice);
    const second = await initialize(stack, tokens.alice);
    for (const { session, response } of [first, second]) {
      expect(session).toMatch(/^[\x21-\x7e]+$/);
      expect(session.length).toBeGreaterThanOrEqual(32);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.messages).toEqual([
        {
          jsonrpc: '2.0',
          id: expect.any(Number),
          result: {
            protocolVersion: LEGACY,
            capabilities: { tools: {} },
            serverInfo: { name: 'connect-broker', version: 'test' },
          },
        },
      ]);
    }
    expect(second.session).not.toBe(first.session);
    // Both sessions are live at once.
    for (const { session } of [first, second])
      expect((await post(stack, tokens.alice, rpc('ping'), { session })).status).toBe(200);
  });

  it('answers 2025-11-25 to a client that asks for another protocol version', async () => {
    for (const asked of ['2024-11-05', '2025-06-18', '2026-07-28', '2099-01-01']) {
      const { response } = await initialize(stack, tokens.alice, asked);
      expect(response.messages[0]?.result?.['protocolVersion']).toBe(LEGACY);
    }
  });

  it('answers 400 to a request on a session that names another MCP-Protocol-Version', async () => {
    const { session } = await initialize(stack, tokens.alice);
    const response = await post(stack, tokens.alice, rpc('ping'), {
      session,
      headers: { 'mcp-protocol-version': '2025-06-18' },
    });
    expect(response.status).toBe(400);
    expect(response.messages[0]?.error?.message).toContain(LEGACY);
  });

  it('answers 400 when a session message carries no Mcp-Session-Id', async () => {
    await initialize(stack, tokens.alice);
    const headers = { 'mcp-protocol-version': LEGACY };
    const ping = await post(stack, tokens.alice, rpc('ping'), { headers });
    expect(ping.status).toBe(400);
    expect(ping.messages[0]).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } });
    const clientResponse = await post(
      stack,
      tokens.alice,
      { jsonrpc: '2.0', id: 'srv-1', result: { action: 'accept' } },
      { headers },
    );
    expect(clientResponse.status).toBe(400);
    const stream = await exchange(stack, 'GET', {
      accept: 'text/event-stream',
      authorization: `Bearer ${tokens.alice}`,
    });
    await stream.ended;
    expect(stream.status).toBe(400);
    const end = await exchange(stack, 'DELETE', { authorization: `Bearer ${tokens.alice}` });
    await end.ended;
    expect(end.status).toBe(400);
  });

  it('answers 404 for an unknown session id', async () => {
    const response = await post(stack, tokens.alice, rpc('tools/list'), {
      session: 'no-such-session-0000000000000000',
    });
    expect(response.status).toBe(404);
    expect(response.messages[0]).toMatchObject({
      jsonrpc: '2.0',
      error: { code: expect.any(Number), message: expect.stringContaining('initialize') },
    });
  });

  it("answers 404 when another principal presents alice's session id", async () => {
    const { session } = await initialize(stack, tokens.alice);
    const response = await post(stack, tokens.bob, rpc('tools/list'), { session });
    expect(response.status).toBe(404);
    const stream = await exchange(stack, 'GET', {
      accept: 'text/event-stream',
      authorization: `Bearer ${tokens.bob}`,
      'mcp-session-id': session,
    });
    await stream.ended;
    expect(stream.status).toBe(404);
    const end = await exchange(stack, 'DELETE', { authorization: `Bearer ${tokens.bob}`, 'mcp-session-id': session });
    await end.ended;
    expect(end.status).toBe(404);
    // bob's attempts did not end or take alice's session.
    expect((await post(stack, tokens.alice, rpc('ping'), { session })).status).toBe(200);
  });

  it('answers 404 for a session another instance started (sessions need affinity)', async () => {
    const { session } = await initialize(stack, tokens.alice);
    const response = await post(stack, tokens.alice, rpc('ping'), { session, baseUrl: stack.secondUrl });
    expect(response.status).toBe(404);
  });

  it('ends a session on DELETE with 204, after which every use of it answers 404', async () => {
    const { session } = await initialize(stack, tokens.alice);
    const stream = await exchange(stack, 'GET', {
      accept: 'text/event-stream',
      authorization: `Bearer ${tokens.alice}`,
      'mcp-session-id': session,
    });
    expect(stream.status).toBe(200);
    const end = await exchange(stack, 'DELETE', {
      authorization: `Bearer ${tokens.alice}`,
      'mcp-session-id': session,
      'mcp-protocol-version': LEGACY,
    });
    await end.ended;
    expect(end.status).toBe(204);
    expect(end.text()).toBe('');
    // The standalone stream of the ended session is closed by the server.
    await expect(
      Promise.race([stream.ended.then(() => 'ended'), new Promise((r) => setTimeout(() => r('still open'), 2_000))]),
    ).resolves.toBe('ended');

    expect((await post(stack, tokens.alice, rpc('ping'), { session })).status).toBe(404);
    expect(
      (await post(stack, tokens.alice, { jsonrpc: '2.0', method: 'notifications/initialized' }, { session })).status,
    ).toBe(404);
    const again = await exchange(stack, 'DELETE', {
      authorization: `Bearer ${tokens.alice}`,
      'mcp-session-id': session,
    });
    await again.ended;
    expect(again.status).toBe(404);
    const reopen = await exchange(stack, 'GET', {
      accept: 'text/event-stream',
      authorization: `Bearer ${tokens.alice}`,
      'mcp-session-id': session,
    });
    await reopen.ended;
    expect(reopen.status).toBe(404);
  });

  it('opens the standalone GET stream as text/event-stream, and a second GET replaces the first', async () => {
    const { session } = await initialize(stack, tokens.alice);
    const headers = {
      accept: 'text/event-stream',
      authorization: `Bearer ${tokens.alice}`,
      'mcp-session-id': session,
      'mcp-protocol-version': LEGACY,
    };
    const first = await exchange(stack, 'GET', headers);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(first.headers['mcp-session-id']).toBe(session);
    const second = await exchange(stack, 'GET', headers);
    expect(second.status).toBe(200);
    expect(second.headers['content-type']).toMatch(/^text\/event-stream/);
    await expect(
      Promise.race([first.ended.then(() => 'ended'), new Promise((r) => setTimeout(() => r('still open'), 2_000))]),
    ).resolves.toBe('ended');
    // The replacement stays open; no JSON-RPC message was sent on either.
    await new Promise((r) => setTimeout(r, 100));
    expect(second.messages).toEqual([]);
    expect(first.messages).toEqual([]);
    second.close();
  });

  it('answers notifications and client responses on a session with 202 and no body', async () => {
    const { session } = await initialize(stack, tokens.alice);
    const notifications = [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 12345, reason: 'test' } },
      { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
    ];
    for (const notification of notifications) {
      const response = await post(stack, tokens.alice, notification, { session });
      expect(response.status).toBe(202);
      expect(response.text()).toBe('');
    }
    const unmatched = await post(
      stack,
      tokens.alice,
      { jsonrpc: '2.0', id: 'srv-999', result: { action: 'accept' } },
      { session },
    );
    expect(unmatched.status).toBe(202);
    expect(unmatched.text()).toBe('');
    const error = await post(
      stack,
      tokens.alice,
      { jsonrpc: '2.0', id: 'srv-998', error: { code: -32603, message: 'client failed' } },
      { session },
    );
    expect(error.status).toBe(202);
    expect(error.text()).toBe('');
  });

  it('answers ping with an empty result', async () => {
    const { session } = await initialize(stack, tokens.alice);
    const request = rpc('ping');
    const response = await post(stack, tokens.alice, request, { session });
    expect(response.status).toBe(200);
    expect(response.headers['mcp-session-id']).toBe(session);
    expect(response.messages).toEqual([{ jsonrpc: '2.0', id: request.id, result: {} }]);
  });

  it('lists the six tools on tools/list, without the modern resultType', async () => {
    const { session } = await initialize(stack, tokens.alice);
    const request = rpc('tools/list');
    const response = await post(stack, tokens.alice, request, { session });
    expect(response.status).toBe(200);
    const [message] = response.messages;
    expect(message?.id).toBe(request.id);
    const tools = message?.result?.['tools'] as { name: string; inputSchema: { type: string } }[];
    expect(tools.map((t) => t.name).sort()).toEqual([
      'github_create_issue',
      'github_list_issues',
      'notes_create',
      'notes_delete',
      'notes_list',
      'notes_workspaces',
      'reports_create',
      'reports_list',
    ]);
    for (const tool of tools) expect(tool.inputSchema.type).toBe('object');
    expect(message?.result).not.toHaveProperty('resultType');
  });

  it('answers -32601 for an unknown method on a session', async () => {
    const { session } = await initialize(stack, tokens.alice);
    const request = rpc('resources/list');
    const response = await post(stack, tokens.alice, request, { session });
    expect(response.messages).toEqual([
      { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: expect.stringContaining('resources/list') } },
    ]);
  });

  it('serves a modern request statelessly even when it carries an Mcp-Session-Id header', async () => {
    const { session } = await initialize(stack, tokens.alice);
    for (const sessionHeader of [session, 'no-such-session-0000000000000000']) {
      const request = { jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: { _meta: meta() } };
      const response = await post(stack, tokens.alice, request, {
        headers: { 'mcp-session-id': sessionHeader, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
      });
      expect(response.status).toBe(200);
      expect(response.headers['mcp-session-id']).toBeUndefined();
      expect(response.messages[0]).toMatchObject({
        jsonrpc: '2.0',
        id: request.id,
        result: { resultType: 'complete' },
      });
    }
  });

  it('lists 2026-07-28 and 2025-11-25 in server/discover', async () => {
    const request = { jsonrpc: '2.0', id: nextId++, method: 'server/discover', params: { _meta: meta() } };
    const response = await post(stack, tokens.alice, request, {
      headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' },
    });
    expect(response.status).toBe(200);
    expect(response.messages[0]?.result?.['supportedVersions']).toEqual(['2026-07-28', LEGACY]);
  });
});
