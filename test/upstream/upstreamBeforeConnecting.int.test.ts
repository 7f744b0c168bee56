import { afterAll, describe, expect, it } from 'vitest';
import { createFetch } from '../../src/shared/httpClient.js';
import * as flow from '../support/connectFlow.js';
import { initialize, isElicitation } from '../support/legacyFaultScenarios.js';
import { mcpPost, meta } from '../support/mcpWire.js';
import { startUpstreamMcp, type UpstreamMcp } from '../support/upstreamMcp.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A host's first tools/list, for a user who never connected, shows every upstream: the tools of one
// that lists them to anyone (asked without a token, with the descriptions it gives), and for one that
// lists them only to a connected user a stand-in, `<prefix>_connect`, whose call connects the user;
// then that upstream's own tools are listed, and a 2025-11-25 session is told its list changed.

let anyone: UpstreamMcp;
let closed: UpstreamMcp;
let slow: UpstreamMcp;
const TOOLS = ['ask_color', 'create_note', 'fail_note', 'whoami'];

describe('upstream tools visible before connecting', () => {
  const { stack, tokens } = useBrokerStack(
    {
      extraProviders: async ({ tls }) => {
        const fetch = createFetch({ extraCaPems: [tls.caPem] });
        [anyone, closed, slow] = await Promise.all([
          startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge', anonymousList: true }),
          startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge' }),
          startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge', anonymousList: true }),
        ]);
        // It answers its list 3 seconds late (within the upstream timeout, past the listing's wait).
        slow.behaviour = { mode: 'normal', listDelayMs: 3_000 };
        return [
          {
            id: 'anyone',
            kind: 'mcp',
            url: anyone.url,
            prefix: 'any',
            registration: 'auto',
            displayName: 'Open Notes',
          },
          {
            id: 'closed',
            kind: 'mcp',
            url: closed.url,
            prefix: 'shut',
            registration: 'auto',
            displayName: 'Shut Notes',
          },
          { id: 'slow', kind: 'mcp', url: slow.url, prefix: 'slow', registration: 'auto', displayName: 'Slow Notes' },
        ];
      },
    },
    { users: ['alice', 'bob'] },
  );
  afterAll(async () => {
    await Promise.all([anyone?.close(), closed?.close(), slow?.close()]);
  });

  type Listed = { tools: { name: string; title?: string; description?: string }[]; cacheScope: string; ttlMs: number };
  const list = async (token: string) =>
    (await mcpPost(stack, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta() } }, { token })).json
      .result as Listed;
  const upstreamTools = (listed: Listed) =>
    listed.tools.filter((t) => t.name.startsWith('any_') || t.name.startsWith('shut_'));

  it('a slow upstream does not hold up the listing: its stand-in meanwhile, its own tools once it answered', async () => {
    const slowTools = (listed: Listed) => listed.tools.map((t) => t.name).filter((n) => n.startsWith('slow_'));
    const started = Date.now();
    const first = await list(tokens.bob);
    expect(Date.now() - started).toBeLessThan(3_500);
    expect(slowTools(first)).toEqual(['slow_connect']);
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    expect(slowTools(await list(tokens.bob))).toEqual(TOOLS.map((t) => `slow_${t}`));
    // It says its list may not be kept (ttlMs 0): each listing asks again, and shows the list it gave
    // last meanwhile, at once, not the stand-in.
    const third = Date.now();
    expect(slowTools(await list(tokens.bob))).toEqual(TOOLS.map((t) => `slow_${t}`));
    expect(Date.now() - third).toBeLessThan(1_000);
  });

  it("a user who never connected is listed the tools of an upstream that lists them to anyone, and the other's stand-in", async () => {
    const listed = await list(tokens.alice);
    expect(upstreamTools(listed).map((t) => t.name)).toEqual([...TOOLS.map((t) => `any_${t}`), 'shut_connect']);
    expect(listed.cacheScope).toBe('public');
    // As the upstream describes them; asked without a token (no bearer reached it), and no call made.
    const whoami = listed.tools.find((t) => t.name === 'any_whoami')!;
    expect(whoami.description).toEqual(expect.any(String));
    expect(whoami.description).not.toContain('broker');
    expect(anyone.methods).toContain('tools/list');
    expect(anyone.bearers).toEqual([]);
    expect(anyone.calls).toEqual([]);
    const standIn = listed.tools.find((t) => t.name === 'shut_connect')!;
    expect(standIn).toMatchObject({ title: 'Connect Shut Notes' });
    expect(standIn.description).toContain('lists its tools only to a user connected to it');
    // The refusal is remembered: another listing within the minute asks the closed upstream nothing.
    const asked = closed.requests.length;
    await list(tokens.bob);
    expect(closed.requests.length).toBe(asked);
  });

  it('2026-07-28: the stand-in connects the user, and then the upstream lists its own tools for them', async () => {
    const elicited = await flow.elicitConnection(stack, tokens.alice, 'shut_connect', {});
    expect(elicited.message).toContain('To list your Shut Notes tools, connect your Shut Notes account');
    await flow.consentAndAuthorize(stack, await flow.openConnectLink(stack, elicited.url, 'alice'), 'alice');
    const done = await flow.retryConnection(stack, tokens.alice, 'shut_connect', {}, elicited.requestState, 'accept');
    const names = [...TOOLS, 'alice_diary'].sort().map((t) => `shut_${t}`);
    expect(done.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'connected', tools: names },
    });
    expect(closed.calls).toEqual([]);
    const listed = await list(tokens.alice);
    expect(upstreamTools(listed).map((t) => t.name)).toEqual([...TOOLS.map((t) => `any_${t}`), ...names]);
    expect(listed.cacheScope).toBe('private');
  });

  it('2025-11-25: the session that listed the stand-in is told its list changed once the call connected the user', async () => {
    const session = await initialize(stack, tokens.bob);
    try {
      const listing = await session.start('tools/list', {});
      const listed = (await listing.next((m) => m.id === listing.requestId)).result as Listed;
      expect(upstreamTools(listed).map((t) => t.name)).toContain('shut_connect');
      const call = await session.start('tools/call', { name: 'shut_connect', arguments: {} });
      const ask = await call.next(isElicitation);
      const url = ask.params?.['url'] as string;
      await flow.consentAndAuthorize(stack, await flow.openConnectLink(stack, url, 'bob'), 'bob');
      await session.send({ id: ask.id, result: { action: 'accept' } });
      const changed = await call.next((m) => m.method === 'notifications/tools/list_changed');
      expect(changed.params ?? {}).toEqual({});
      const final = await call.next((m) => m.id === call.requestId);
      expect(final.result).toMatchObject({ structuredContent: { status: 'connected' } });
      const again = await session.start('tools/list', {});
      const now = (await again.next((m) => m.id === again.requestId)).result as Listed;
      expect(upstreamTools(now).map((t) => t.name)).toContain('shut_whoami');
      expect(upstreamTools(now).map((t) => t.name)).not.toContain('shut_connect');
    } finally {
      await session.end();
    }
  });
});
