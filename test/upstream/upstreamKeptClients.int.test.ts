import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutcomeUnknownError } from '../../src/broker/acceptOriginalOperation.js';
import { UpstreamUnauthorizedError } from '../../src/broker/forgetConnection.js';
import { createFetch } from '../../src/shared/httpClient.js';
import {
  createUpstreamMcp,
  type UpstreamMcp as UpstreamMcpClient,
  type UpstreamTool,
} from '../../src/upstream/upstreamMcpClient.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { callTool } from '../support/mcpWire.js';
import { startUpstreamMcp, type UpstreamMcp } from '../support/upstreamMcp.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The broker keeps its SDK clients on an upstream connected between calls (per upstream, user's
// token and elicitation modes): after the first call, each proxied call is one tools/call upstream.
// One client then serves concurrent calls, each with its own account of what reached the upstream,
// and a 401 drops the token's clients.

let notes: UpstreamMcp;
const TIMEOUT_MS = 2_000;

describe('kept upstream clients', () => {
  const { stack, tokens } = useBrokerStack(
    {
      upstreamTimeoutMs: TIMEOUT_MS,
      extraProviders: async ({ tls }) => {
        const fetch = createFetch({ extraCaPems: [tls.caPem] });
        notes = await startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge', listTtlMs: 60_000 });
        return [{ id: 'upnotes', kind: 'mcp', url: notes.url, prefix: 'up', registration: 'auto' }];
      },
    },
    { users: ['alice'] },
  );
  afterAll(async () => {
    await notes?.close();
  });
  const textOf = (response: { json: Record<string, unknown> }) =>
    (response.json['result'] as { content?: { text: string }[] }).content?.[0]?.text ?? '';
  // alice's upstream token, as the upstream last received it from the broker.
  let upstreamToken: string;

  beforeAll(async () => {
    const elicited = await elicitConnection(stack, tokens.alice, 'up_whoami', {});
    const done = await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    expect(done.status).toBe(200);
    await retryConnection(stack, tokens.alice, 'up_whoami', {}, elicited.requestState, 'accept');
    upstreamToken = notes.bearers.at(-1)!.replace(/^Bearer /, '');
  });

  it('a connected call is one tools/call upstream: no server/discover, no tools/list, once the client is kept', async () => {
    // Warm: the host's modes have a client, and the list is cached for its ttlMs.
    expect(textOf(await callTool(stack, tokens.alice, 'up_create_note', { title: 'warm' }))).toContain('Created');
    const before = notes.methods.length;
    for (const title of ['kept one', 'kept two', 'kept three'])
      expect(textOf(await callTool(stack, tokens.alice, 'up_create_note', { title }))).toBe(
        `Created "${title}" for up-alice.`,
      );
    expect(notes.methods.slice(before)).toEqual(['tools/call', 'tools/call', 'tools/call']);
  });

  describe('one client, concurrent calls', () => {
    let mcp: UpstreamMcpClient;
    let createNote: UpstreamTool;
    beforeAll(async () => {
      mcp = createUpstreamMcp({
        fetch: stack.fetch,
        timeoutMs: TIMEOUT_MS,
        clientInfo: { name: 'test', version: '1' },
      });
      const listed = await mcp.listTools(notes.url, upstreamToken);
      createNote = listed.tools.find((t) => t.name === 'create_note')!;
    });
    const call = (name: string, title: string) =>
      mcp
        .callTool(
          notes.url,
          upstreamToken,
          name,
          { title },
          name === 'create_note' ? createNote : { ...createNote, name },
        )
        .then(
          (answer) => answer,
          (err: unknown) => err,
        );

    it('each call is classified by its own requests: one cut, one answered an error, one done', async () => {
      // Connected and kept: the calls below all go on this client.
      expect(await call('create_note', 'first')).toMatchObject({ kind: 'result' });
      const before = notes.methods.length;
      let release!: () => void;
      notes.gates.set('late', new Promise<void>((resolve) => (release = resolve)));
      notes.behaviour = { mode: 'reset', onlyTitle: 'cut' };
      try {
        // The upstream answers an unknown tool with a JSON-RPC error, once the cut call has failed.
        const late = call('no_such_tool', 'late');
        const done = call('create_note', 'done');
        const cut = await call('create_note', 'cut');
        expect(cut).toBeInstanceOf(OutcomeUnknownError);
        expect((cut as Error).message).toContain('closed the connection');
        release();
        expect(await late).toMatchObject({ kind: 'error', message: expect.stringContaining('no_such_tool') });
        expect(await done).toMatchObject({
          kind: 'result',
          result: { content: [{ type: 'text', text: 'Created "done" for up-alice.' }] },
        });
      } finally {
        notes.behaviour = { mode: 'normal' };
        notes.gates.clear();
      }
      // Three calls, each sent once, on the kept client: nothing else was asked.
      expect(notes.methods.slice(before).sort()).toEqual(['tools/call', 'tools/call', 'tools/call']);
      expect(notes.calls.slice(-3).map((c) => (c.args as { title: string }).title)).toEqual(['late', 'done', 'cut']);
      // Only one of them was done: the cut one was read and never run, and there is no tool for the other.
      expect(notes.created.filter((t) => ['done', 'cut', 'late'].includes(t))).toEqual(['done']);
      // The tag that tells the broker's fetch whose request it sends never leaves the broker.
      expect([...notes.headerNames].filter((h) => h.startsWith('x-connect-broker'))).toEqual([]);
    });

    it('a 401 drops the kept client of that token: the next call connects again', async () => {
      expect(await call('create_note', 'before refusal')).toMatchObject({ kind: 'result' });
      const before = notes.methods.length;
      expect(await call('create_note', 'still kept')).toMatchObject({ kind: 'result' });
      expect(notes.methods.slice(before)).toEqual(['tools/call']);
      notes.behaviour = { mode: 'refuse' };
      try {
        expect(await call('create_note', 'refused')).toBeInstanceOf(UpstreamUnauthorizedError);
      } finally {
        notes.behaviour = { mode: 'normal' };
      }
      const after = notes.methods.length;
      expect(await call('create_note', 'after refusal')).toMatchObject({ kind: 'result' });
      // A new client: it asked the upstream what it speaks before the call.
      expect(notes.methods.slice(after)).toEqual(['server/discover', 'tools/call']);
    });
  });
});
