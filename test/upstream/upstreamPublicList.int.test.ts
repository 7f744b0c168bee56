import { afterAll, describe, expect, it } from 'vitest';
import * as flow from '../support/connectFlow.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { callTool, mcpPost, meta } from '../support/mcpWire.js';
import { startUpstreamMcp, type UpstreamMcp } from '../support/upstreamMcp.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An upstream whose tools/list says cacheScope public (the same for every user, MCP 2026-07-28
// cache hints) beside one whose list is private (alice has a tool nobody else has). A user not
// connected to the public one is served its list once a connected user's fetch brought it; a
// private list is served only to whoever's token fetched it; and a tools/list with any private part
// is private as a whole.

let open: UpstreamMcp;
let closed: UpstreamMcp;
const PUBLIC_TTL_MS = 45_000;
const TOOLS = ['ask_color', 'create_note', 'fail_note', 'whoami'];
const PUB = TOOLS.map((t) => `pub_${t}`);

describe('an upstream list marked public', () => {
  const { stack, tokens } = useBrokerStack(
    {
      extraProviders: async ({ tls }) => {
        const fetch = createFetch({ extraCaPems: [tls.caPem] });
        [open, closed] = await Promise.all([
          startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge', publicListTtlMs: PUBLIC_TTL_MS }),
          startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge' }),
        ]);
        return [
          { id: 'opennotes', kind: 'mcp', url: open.url, prefix: 'pub', registration: 'auto' },
          { id: 'closednotes', kind: 'mcp', url: closed.url, prefix: 'priv', registration: 'auto' },
        ];
      },
    },
    { users: ['alice', 'bob', 'mallory'] },
  );
  afterAll(async () => {
    await Promise.all([open?.close(), closed?.close()]);
  });

  const list = async (token: string) =>
    (await mcpPost(stack, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta() } }, { token })).json
      .result as { tools: { name: string; inputSchema: unknown }[]; cacheScope: string; ttlMs: number };
  const upstreamNames = (listed: { tools: { name: string }[] }) =>
    listed.tools.map((t) => t.name).filter((n) => n.startsWith('pub_') || n.startsWith('priv_'));
  async function connect(login: 'alice' | 'bob' | 'mallory', tool: string) {
    const elicited = await flow.elicitConnection(stack, tokens[login], tool, {});
    const done = await flow.consentAndAuthorize(stack, await flow.openConnectLink(stack, elicited.url, login), login);
    expect(done.status).toBe(200);
    const retried = await flow.retryConnection(stack, tokens[login], tool, {}, elicited.requestState, 'accept');
    expect((retried.json.result as { resultType: string }).resultType).toBe('complete');
  }

  it('a user not connected is served the public list a connected user fetched, public, and calling its tool starts the connect flow', async () => {
    // Nobody connected yet, and neither lists its tools without a token: each is its stand-in, which connects.
    const calledBefore = open.calls.length + closed.calls.length;
    expect(upstreamNames(await list(tokens.bob))).toEqual(['priv_connect', 'pub_connect']);
    expect(open.calls.length + closed.calls.length).toBe(calledBefore);
    await connect('alice', 'pub_whoami');
    const alices = await list(tokens.alice);
    expect(upstreamNames(alices)).toEqual(['priv_connect', ...PUB]);
    const before = open.calls.length;
    const bobs = await list(tokens.bob);
    expect(upstreamNames(bobs)).toEqual(['priv_connect', ...PUB]);
    expect(bobs.cacheScope).toBe('public');
    expect(bobs.ttlMs).toBeLessThanOrEqual(PUBLIC_TTL_MS);
    expect(bobs.tools.find((t) => t.name === 'pub_create_note')).toEqual(
      alices.tools.find((t) => t.name === 'pub_create_note'),
    );
    // bob has no connection: his call asks him to connect, and nothing reaches the upstream.
    const called = await callTool(stack, tokens.bob, 'pub_create_note', { title: 'bob' }, {}, flow.URL_CAPS);
    expect((called.json.result as { resultType: string }).resultType).toBe('input_required');
    expect(open.calls.length).toBe(before);
  });

  it('a private list is never served to another user, and a tools/list with a private part is private', async () => {
    await connect('alice', 'priv_whoami');
    const alices = await list(tokens.alice);
    expect(upstreamNames(alices)).toContain('priv_alice_diary');
    expect(alices.cacheScope).toBe('private');
    // bob, connected to neither: the public list and the private one's stand-in, still public.
    const bobs = await list(tokens.bob);
    expect(upstreamNames(bobs).filter((n) => n.startsWith('priv_'))).toEqual(['priv_connect']);
    expect(bobs.cacheScope).toBe('public');
    // mallory, connected to the private upstream only: her own list there (no diary) and the public
    // list beside it; one private part makes the whole answer private.
    await connect('mallory', 'priv_whoami');
    const mallorys = await list(tokens.mallory);
    expect(upstreamNames(mallorys)).toEqual([...TOOLS.map((t) => `priv_${t}`), ...PUB]);
    expect(mallorys.cacheScope).toBe('private');
  });
});
