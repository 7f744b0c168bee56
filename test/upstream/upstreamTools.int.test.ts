import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { sampleValue } from '../support/metricsText.js';
import { callTool, mcpPost, meta, tokenFor } from '../support/mcpWire.js';
import { operatorCli } from '../support/operatorCli.js';
import { connectSdkClient } from '../support/sdkClient.js';
import type { BrowserResponse } from '../support/testBrowser.js';
import { startUpstreamMcp, type UpstreamMcp } from '../support/upstreamMcp.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An upstream MCP server's tools on the broker's /mcp: listed per user after the broker's own,
// called through the connect flow when the user has no connection, sent once per accepted
// operation with the user's upstream token (never the host's), and what goes wrong on the way
// (a refused token, a slow, garbled, cut or stopped upstream) a tool error within the deadline.

let notes: UpstreamMcp;
let flaky: UpstreamMcp;
let old: UpstreamMcp;
const TIMEOUT_MS = 1_500;
const METRICS_TOKEN = randomBytes(32).toString('base64url');
const entries = () => [
  { id: 'upnotes', kind: 'mcp', url: notes.url, prefix: 'up', registration: 'auto', displayName: 'Up Notes' },
  { id: 'flaky', kind: 'mcp', url: flaky.url, prefix: 'flaky', registration: 'auto' },
  { id: 'oldnotes', kind: 'mcp', url: old.url, prefix: 'old', registration: 'auto' },
];

describe('upstream MCP tools on /mcp', () => {
  const { stack, tokens } = useBrokerStack(
    {
      upstreamTimeoutMs: TIMEOUT_MS,
      metrics: (pool) => createMetrics({ pool, logger: createLogger({ level: 'silent' }), gateCacheMs: 0 }),
      metricsToken: METRICS_TOKEN,
      extraProviders: async ({ tls }) => {
        const fetch = createFetch({ extraCaPems: [tls.caPem] });
        [notes, flaky, old] = await Promise.all([
          startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge' }),
          startUpstreamMcp({ tls, fetch, registration: 'dcr', metadata: 'path' }),
          startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge', era: '2025-11-25' }),
        ]);
        return entries();
      },
    },
    { users: ['alice', 'bob', 'mallory'] },
  );
  afterAll(async () => {
    await Promise.all([notes?.close(), flaky?.close(), old?.close()]);
  });

  const list = async (token: string) => {
    const response = await mcpPost(
      stack,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta() } },
      { token },
    );
    return response.json.result as {
      tools: { name: string; description?: string; inputSchema: unknown }[];
      cacheScope: string;
      ttlMs: number;
    };
  };
  const resultOf = (response: { json: Record<string, unknown> }) =>
    response.json['result'] as {
      resultType: string;
      isError?: boolean;
      content?: { type: string; text: string }[];
      structuredContent?: Record<string, unknown>;
      inputRequests?: Record<string, { params: { url: string } }>;
    };
  const textOf = (response: { json: Record<string, unknown> }) => resultOf(response).content?.[0]?.text ?? '';
  const callsOf = (server: UpstreamMcp, title: string) =>
    server.calls.filter((c) => (c.args as { title?: string } | undefined)?.title === title);

  /** `login` calls `tool`, is asked to connect, connects in the browser, and retries with accept. */
  async function connectThrough(login: 'alice' | 'bob' | 'mallory', tool: string, args: object, baseUrl?: string) {
    const elicited = await elicitConnection(stack, tokens[login], tool, args);
    const done = await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, login), login);
    expect(done.status).toBe(200);
    const retried = await retryConnection(stack, tokens[login], tool, args, elicited.requestState, 'accept', baseUrl);
    return { elicited, retried };
  }

  it('a user without a connection is asked to connect; the accepted call is sent once, with their upstream token', async () => {
    // Not connected, and the upstream lists its tools only to a connected user: its stand-in.
    expect((await list(tokens.alice)).tools.map((t) => t.name).filter((n) => n.startsWith('up_'))).toEqual([
      'up_connect',
    ]);
    const args = { title: 'first', tags: ['a'] };
    const { elicited, retried } = await connectThrough('alice', 'up_create_note', args);
    expect(elicited.message).toContain('Up Notes');
    expect(new URL(elicited.url).origin).toBe(stack.brokerUrl);
    expect(resultOf(retried)).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'Created "first" for up-alice.' }],
      structuredContent: { title: 'first', owner: 'up-alice' },
    });
    // Retried again, on the other instance too: the recorded outcome, no second call.
    const again = await retryConnection(
      stack,
      tokens.alice,
      'up_create_note',
      args,
      elicited.requestState,
      'accept',
      stack.secondUrl,
    );
    expect(textOf(again)).toBe('Created "first" for up-alice.');
    expect(callsOf(notes, 'first')).toEqual([{ tool: 'create_note', args, sub: 'up-alice' }]);
    // The host's bearer never reached the upstream: every token it saw is one of its own authorization server's.
    expect(notes.bearers.length).toBeGreaterThan(0);
    expect(notes.bearers.some((b) => b.includes(tokens.alice))).toBe(false);
    expect(notes.accepted.every((a) => a.aud === notes.url)).toBe(true);
  });

  it("lists a connected user's upstream tools after the broker's own, passed through and private; another user never sees them", async () => {
    const alice = await list(tokens.alice);
    const names = alice.tools.map((t) => t.name);
    const own = names.filter((n) => !/^(up|flaky|old)_/.test(n));
    expect(names.slice(0, own.length)).toEqual([...own].sort());
    // Upstreams in prefix order: the two alice is not connected to as their stand-ins.
    expect(names.slice(own.length)).toEqual([
      'flaky_connect',
      'old_connect',
      'up_alice_diary',
      'up_ask_color',
      'up_create_note',
      'up_fail_note',
      'up_whoami',
    ]);
    expect(alice.cacheScope).toBe('private');
    const created = alice.tools.find((t) => t.name === 'up_create_note')!;
    expect(created).toMatchObject({
      title: 'Create a note',
      description: 'Creates a note with this title for the signed-in user.',
      annotations: { destructiveHint: false },
      inputSchema: { type: 'object', properties: { title: { type: 'string', minLength: 1 } }, required: ['title'] },
    });
    // bob connects too: his own list, without alice's tool, though alice's list is cached.
    await connectThrough('bob', 'up_whoami', {});
    const bob = (await list(tokens.bob)).tools.map((t) => t.name).filter((n) => n.startsWith('up_'));
    expect(bob).toEqual(['up_ask_color', 'up_create_note', 'up_fail_note', 'up_whoami']);
    const diary = await callTool(stack, tokens.bob, 'up_alice_diary', {});
    expect(resultOf(diary).isError).toBe(true);
    expect(textOf(diary)).toContain('no tool up_alice_diary');
  });

  it('a connected call goes straight to the upstream; its tool errors are relayed', async () => {
    const done = await callTool(stack, tokens.alice, 'up_create_note', { title: 'direct' });
    expect(textOf(done)).toBe('Created "direct" for up-alice.');
    expect(callsOf(notes, 'direct')).toHaveLength(1);
    const failed = await callTool(stack, tokens.alice, 'up_fail_note', {});
    expect(resultOf(failed)).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'The notebook is read-only.' }],
    });
    // A tool that needs to ask the user first: the host declared forms, so the broker did too, and the
    // upstream's form comes back as the broker's own input_required; the retry's answer goes upstream.
    const asked = await callTool(stack, tokens.alice, 'up_ask_color', {});
    const relayed = asked.json.result as {
      resultType: string;
      inputRequests: Record<string, unknown>;
      requestState: string;
    };
    expect(relayed.resultType).toBe('input_required');
    expect(Object.keys(relayed.inputRequests)).toEqual(['color']);
    const answered = await callTool(
      stack,
      tokens.alice,
      'up_ask_color',
      {},
      {
        requestState: relayed.requestState,
        inputResponses: { color: { action: 'accept', content: { color: 'red' } } },
      },
    );
    expect(textOf(answered)).toBe('Colour: red');
    // A host that declares no elicitation: none is declared upstream, which refuses (-32021), relayed as a tool error.
    const refused = await callTool(stack, tokens.alice, 'up_ask_color', {}, {}, {});
    expect(resultOf(refused).isError).toBe(true);
    expect(textOf(refused)).toContain('Up Notes answered up_ask_color with an error');
    expect(textOf(refused)).toContain('capabilit');
  });

  it('two instances racing one accepted call send it once', async () => {
    const args = { title: 'raced' };
    const elicited = await elicitConnection(stack, tokens.mallory, 'up_create_note', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'mallory'), 'mallory');
    const answers = await Promise.all(
      [stack.brokerUrl, stack.secondUrl, stack.brokerUrl, stack.secondUrl].map((base) =>
        retryConnection(stack, tokens.mallory, 'up_create_note', args, elicited.requestState, 'accept', base),
      ),
    );
    for (const answer of answers) expect(textOf(answer)).toBe('Created "raced" for up-mallory.');
    expect(callsOf(notes, 'raced')).toHaveLength(1);
  });

  it("a user not connected sees the operator's pinned snapshot, public, and calling one of its tools starts the connect flow", async () => {
    const ops = await tokenFor(stack, 'ops');
    const before = await list(ops);
    // alice's private list (her diary) never reaches a user who is not connected.
    expect(before.tools.map((t) => t.name).filter((n) => n.startsWith('up_') || n.startsWith('flaky_'))).toEqual([
      'flaky_connect',
      'up_connect',
    ]);
    expect(before.cacheScope).toBe('public');
    const file = join(stack.dataDir, 'upstreams.json');
    await writeFile(file, JSON.stringify(entries()));
    const cli = await operatorCli(stack, 'ops', { command: 'upstreams', env: { PROVIDERS_FILE: file } });
    const snapshot = join(stack.dataDir, 'flaky-tools.json');
    const tool = {
      name: 'create_note',
      description: 'Creates a note.',
      inputSchema: { type: 'object', properties: { title: { type: 'string' } } },
    };
    await writeFile(snapshot, JSON.stringify({ tools: [{ ...tool, inputSchema: { type: 'array' } }] }));
    const refused = await cli('snapshot', 'flaky', '--file', snapshot);
    expect(refused.code).toBe(2);
    expect(refused.output).toContain('tools[0][inputSchema][type]');
    await writeFile(snapshot, JSON.stringify({ tools: [tool] }));
    const byAlice = await (
      await operatorCli(stack, 'alice', { command: 'upstreams', env: { PROVIDERS_FILE: file } })
    )('snapshot', 'flaky', '--file', snapshot);
    expect(byAlice.code).toBe(3);
    expect((await list(ops)).tools.map((t) => t.name)).not.toContain('flaky_create_note');
    const pinned = await cli('snapshot', 'flaky', '--file', snapshot);
    expect(pinned.code, pinned.output).toBe(0);
    expect(pinned.output).toContain('Pinned 1 tools for flaky: create_note');
    const listed = await cli('list', '--json');
    const rows = JSON.parse(listed.output.split('\n').find((line) => line.startsWith('['))!) as {
      id: string;
      snapshot: unknown;
    }[];
    expect(rows.map((r) => [r.id, r.snapshot === null])).toEqual([
      ['upnotes', true],
      ['flaky', false],
      ['oldnotes', true],
    ]);
    const after = await list(ops);
    expect(after.tools.find((t) => t.name === 'flaky_create_note')).toEqual({ ...tool, name: 'flaky_create_note' });
    // The snapshot takes the stand-in's place.
    expect(after.tools.map((t) => t.name)).not.toContain('flaky_connect');
    expect(after.cacheScope).toBe('public');
    const asked = await callTool(stack, ops, 'flaky_create_note', { title: 'x' }, {}, { elicitation: { url: {} } });
    expect(resultOf(asked).resultType).toBe('input_required');
    expect(flaky.calls).toHaveLength(0);
    const cleared = await cli('snapshot', 'flaky', '--clear');
    expect(cleared.output).toContain('Snapshot of flaky removed.');
    expect((await list(ops)).tools.map((t) => t.name)).not.toContain('flaky_create_note');
    expect((await list(ops)).tools.map((t) => t.name)).toContain('flaky_connect');
  });

  it('a 2025-11-25 host gets the nested elicitation, and the accepted call is sent once; its list is the same', async () => {
    const ops = await tokenFor(stack, 'ops');
    let browser: Promise<BrowserResponse> | undefined;
    const sdk = await connectSdkClient(stack, ops, {
      era: '2025-11-25',
      url: (params) => {
        browser = openConnectLink(stack, params.url, 'ops').then((run) => consentAndAuthorize(stack, run, 'ops'));
        return { action: 'accept' };
      },
    });
    try {
      const result = await sdk.client.callTool({ name: 'up_create_note', arguments: { title: 'legacy' } });
      expect((await browser)?.status).toBe(200);
      expect(result.content).toEqual([{ type: 'text', text: 'Created "legacy" for up-ops.' }]);
      expect(sdk.urlAsks).toHaveLength(1);
      expect(callsOf(notes, 'legacy')).toHaveLength(1);
      const [receipt, ...more] = (
        await stack.db.pool.query(
          `SELECT r.lineage, r.outcome_status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id
            WHERE n.tool = 'up_create_note' AND n.subject_sub = 'ops'`,
        )
      ).rows;
      expect(more).toEqual([]);
      expect(receipt).toEqual({ lineage: 'nested', outcome_status: 'succeeded' });
      const names = (await sdk.client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('up_'));
      expect(names).toEqual(['up_ask_color', 'up_create_note', 'up_fail_note', 'up_whoami']);
    } finally {
      await sdk.client.close();
    }
  });

  it('a 2025-11-25 upstream: one initialize and session per user, kept across calls, initialised again on 404', async () => {
    const { retried } = await connectThrough('alice', 'old_create_note', { title: 'old one' });
    expect(textOf(retried)).toBe('Created "old one" for up-alice.');
    const second = await callTool(stack, tokens.alice, 'old_create_note', { title: 'old two' });
    expect(textOf(second)).toBe('Created "old two" for up-alice.');
    // The broker's list and both calls went on one session of alice's.
    expect(old.initializes).toEqual(['up-alice']);
    // The upstream ends its sessions: the next call gets 404, initialises again and is sent once.
    old.sessions.clear();
    const third = await callTool(stack, tokens.alice, 'old_create_note', { title: 'old three' });
    expect(textOf(third)).toBe('Created "old three" for up-alice.');
    expect(old.initializes).toEqual(['up-alice', 'up-alice']);
    // Done once each (the request that met the ended session reached the server and did nothing).
    expect(old.created).toEqual(['old one', 'old two', 'old three']);
  });

  it('an upstream 401 forgets the connection and the next call asks to connect again', async () => {
    notes.behaviour = { mode: 'refuse' };
    try {
      const refused = await callTool(
        stack,
        tokens.bob,
        'up_create_note',
        { title: 'refused' },
        {},
        { elicitation: { url: {} } },
      );
      // Nothing was done there: asked exactly as if never connected.
      expect(resultOf(refused).resultType).toBe('input_required');
      expect(resultOf(refused).inputRequests?.['connect']?.params.url).toContain('/connect/');
    } finally {
      notes.behaviour = { mode: 'normal' };
    }
    const after = await callTool(stack, tokens.bob, 'up_whoami', {}, {}, { elicitation: { url: {} } });
    expect(resultOf(after).resultType).toBe('input_required');
  });

  it('an accepted call whose answer is lost is never sent again: recorded for an operator', async () => {
    const args = { title: 'lost' };
    flaky.behaviour = { mode: 'slow', slowMs: 10 * TIMEOUT_MS };
    try {
      const { elicited, retried } = await connectThrough('alice', 'flaky_create_note', args);
      expect(resultOf(retried).isError).toBe(true);
      expect(textOf(retried)).toContain('did not answer in time');
      expect(textOf(retried)).toContain('not sent again');
      const again = await retryConnection(
        stack,
        tokens.alice,
        'flaky_create_note',
        args,
        elicited.requestState,
        'accept',
        stack.secondUrl,
      );
      expect(resultOf(again).isError).toBe(true);
      expect(textOf(again)).toContain('recorded for an operator');
      expect(callsOf(flaky, 'lost')).toHaveLength(1);
      const rows = await stack.db.pool.query(
        `SELECT r.outcome_status, r.outcome_unknown_at FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id
          WHERE n.tool = 'flaky_create_note'`,
      );
      expect(rows.rows).toEqual([{ outcome_status: 'pending', outcome_unknown_at: expect.any(Date) }]);
    } finally {
      flaky.behaviour = { mode: 'normal' };
    }
  });

  it('a slow, garbled, cut or stopped upstream is a clear tool error', async () => {
    const cases: [UpstreamMcp['behaviour'], string][] = [
      [{ mode: 'slow', slowMs: 10 * TIMEOUT_MS }, 'did not answer in time'],
      [{ mode: 'garbage' }, 'gave no answer the broker can read'],
      [{ mode: 'reset' }, 'closed the connection'],
    ];
    for (const [behaviour, words] of cases) {
      flaky.behaviour = behaviour;
      const answer = await callTool(stack, tokens.alice, 'flaky_create_note', { title: `case ${behaviour.mode}` });
      expect(resultOf(answer).isError, behaviour.mode).toBe(true);
      expect(textOf(answer), behaviour.mode).toContain(words);
      expect(callsOf(flaky, `case ${behaviour.mode}`)).toHaveLength(1);
    }
    flaky.behaviour = { mode: 'normal' };
    await flaky.stopMcp();
    const down = await callTool(stack, tokens.alice, 'flaky_create_note', { title: 'down' });
    expect(resultOf(down).isError).toBe(true);
    expect(textOf(down)).toMatch(/could not be asked|did not list/);
    // Each counted on /metrics by upstream, method and outcome (this instance's own requests).
    const metrics = await (
      await stack.fetch(`${stack.brokerUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    const count = (upstream: string, method: string, outcome: string) =>
      sampleValue(metrics, 'broker_upstream_requests_total', { upstream, method, outcome }) ?? 0;
    expect(count('flaky', 'tools/call', 'unknown')).toBeGreaterThanOrEqual(3);
    // Stopped, it refuses the connection: its list (which the call reads first) or the call itself.
    expect(count('flaky', 'tools/list', 'unreachable') + count('flaky', 'tools/call', 'unreachable')).toBe(1);
    expect(count('upnotes', 'tools/call', 'ok')).toBeGreaterThanOrEqual(1);
    expect(count('upnotes', 'tools/call', 'tool_error')).toBe(1);
    expect(count('upnotes', 'tools/list', 'ok')).toBeGreaterThanOrEqual(1);
  });
});
