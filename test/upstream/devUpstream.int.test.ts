import { describe, expect, it } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { callTool, mcpPost, meta } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// What npm start runs with no configuration: the development upstream MCP server (the SDK's
// stateless handler behind its own oidc-provider, with Client ID Metadata Documents and Dynamic
// Client Registration) registered as an upstream, so a proxied tool works end to end.

describe('the development upstream MCP server', () => {
  const { stack, tokens } = useBrokerStack({ devUpstream: true }, { users: ['alice', 'bob'] });
  const textOf = (response: { json: Record<string, unknown> }) =>
    (response.json['result'] as { content?: { text: string }[] }).content?.[0]?.text;

  const listOf = async (token: string) =>
    (
      (await mcpPost(stack, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta() } }, { token })).json
        .result as { tools: { name: string; title?: string }[] }
    ).tools;

  it('shows a user who never connected its stand-in, Connect Memo, as npm start does', async () => {
    const memo = (await listOf(tokens.bob)).filter((t) => t.name.startsWith('memo_'));
    expect(memo.map((t) => [t.name, t.title])).toEqual([['memo_connect', 'Connect Memo (development MCP server)']]);
  });

  it("is connected through the broker's pages and its tools proxied, each user's memos their own", async () => {
    const args = { text: 'buy milk' };
    const elicited = await elicitConnection(stack, tokens.alice, 'memo_save', args);
    expect(elicited.message).toContain('Memo (development MCP server)');
    const done = await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    expect(done.status).toBe(200);
    // The broker registered with its Client ID Metadata Document, served on its own origin.
    const [registered] = (
      await stack.db.pool.query("SELECT count(*)::int AS n FROM upstream_registrations WHERE upstream = 'memo'")
    ).rows as { n: number }[];
    expect(registered!.n).toBe(0);
    const saved = await retryConnection(stack, tokens.alice, 'memo_save', args, elicited.requestState, 'accept');
    expect(textOf(saved)).toBe('Saved memo 1.');
    expect(textOf(await callTool(stack, tokens.alice, 'memo_list', {}))).toBe('1. buy milk');
    const names = (await listOf(tokens.alice)).map((t) => t.name);
    expect(names.slice(-2)).toEqual(['memo_list', 'memo_save']);
    expect(names).not.toContain('memo_connect');
    // bob has no connection: asked to connect, and never shown alice's memos.
    const bob = await callTool(stack, tokens.bob, 'memo_list', {}, {}, { elicitation: { url: {} } });
    expect((bob.json.result as { resultType: string }).resultType).toBe('input_required');
  });
});
