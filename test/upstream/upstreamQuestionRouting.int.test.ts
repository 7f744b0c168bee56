import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFetch } from '../../src/shared/httpClient.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import type { UpstreamAskAnswer } from '../../src/upstream/upstreamCallRouting.js';
import { createUpstreamMcp, type UpstreamTool } from '../../src/upstream/upstreamMcpClient.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';

// A 2025-11-25 upstream asks a question with a request of its own on a call's event stream, and the
// broker answers it for the call the stream belongs to. The JSON-RPC ids are the upstream's to choose
// (each session counts from 0), so an id alone names no call: two users' sessions use the same ids,
// and a hostile upstream can send one another session will use. Questions are routed by
// (upstream, session, id).
//
// The upstream here is written by hand, to choose its ids and streams: sessions by bearer token, a
// question on a call's stream or on the session's own GET stream, and every answer the broker posts.

type Sent = { token: string; message: Record<string, unknown> };

let dir: string;
let server: HttpsTestServer;
let mcp: ReturnType<typeof createUpstreamMcp>;
let tool: UpstreamTool | undefined;
/** The session's own stream (GET), by token. */
const standalone = new Map<string, ServerResponse>();
/** What the broker posted that was not a request: its answers to the upstream's questions. */
let answers: Sent[];
/** How a tools/call is served, by token. */
let onCall: (token: string, id: unknown, stream: ServerResponse) => void;

const QUESTION = {
  mode: 'form',
  message: 'Which colour?',
  requestedSchema: { type: 'object', properties: { color: { type: 'string' } } },
};
const event = (res: ServerResponse, message: Record<string, unknown>) =>
  res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`);
const openStream = (res: ServerResponse, session: string) =>
  res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': session });

function serve(req: IncomingMessage, res: ServerResponse): void {
  const token = String(req.headers.authorization).replace(/^Bearer /, '');
  const session = `session-${token}`;
  if (req.method === 'GET') {
    openStream(res, session);
    res.write(': open\n\n');
    standalone.set(token, res);
    return;
  }
  if (req.method === 'DELETE') return void res.writeHead(200).end();
  let text = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => (text += chunk));
  req.on('end', () => {
    const message = JSON.parse(text) as Record<string, unknown> & { id?: unknown; method?: string };
    const json = (value: unknown, status = 200) =>
      res
        .writeHead(status, { 'content-type': 'application/json', 'mcp-session-id': session })
        .end(JSON.stringify(value));
    if (message.method === undefined) {
      answers.push({ token, message });
      return void res.writeHead(202).end();
    }
    switch (message.method) {
      case 'initialize':
        return json({
          jsonrpc: '2.0',
          id: message.id,
          result: {
            protocolVersion: '2025-11-25',
            capabilities: { tools: {} },
            serverInfo: { name: 'hostile', version: 'test' },
          },
        });
      case 'notifications/initialized':
        return void res.writeHead(202).end();
      case 'tools/list':
        return json({
          jsonrpc: '2.0',
          id: message.id,
          result: { tools: [{ name: 'ask', inputSchema: { type: 'object' } }] },
        });
      case 'tools/call':
        openStream(res, session);
        return onCall(token, message.id, res);
      default:
        // A 2025-11-25 server knows no server/discover before initialize: the client falls back to it.
        return json({ error: 'initialize first' }, 400);
    }
  });
}

const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(done()).toBe(true);
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'question-routing-'));
  const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
  server = await listenHttps(tls);
  server.setHandler(serve);
  mcp = createUpstreamMcp({
    fetch: createFetch({ extraCaPems: [tls.caPem] }),
    timeoutMs: 5_000,
    clientInfo: { name: 'connect-broker', version: 'test' },
  });
  [tool] = (await mcp.listTools(`${server.origin}/mcp`, 'alice')).tools;
  await mcp.listTools(`${server.origin}/mcp`, 'bob');
  await until(() => standalone.has('alice') && standalone.has('bob'));
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  answers = [];
});

/** A tools/call as `token`, each question it is asked recorded and answered with `color`. */
function callAs(token: string, color: string, asked: Record<string, unknown>[]) {
  return mcp.callTool(`${server.origin}/mcp`, token, 'ask', {}, tool!, {
    ask: async (params): Promise<UpstreamAskAnswer> => {
      asked.push(params);
      return { kind: 'answer', result: { action: 'accept', content: { color } } };
    },
  });
}

describe("an upstream's question, routed by (upstream, session, JSON-RPC id)", () => {
  it('two users, the same id: each answer reaches only its own call', async () => {
    onCall = (token, id, stream) => {
      event(stream, { id: 0, method: 'elicitation/create', params: QUESTION });
      const answered = setInterval(() => {
        const answer = answers.find((a) => a.token === token && a.message['id'] === 0);
        if (!answer) return;
        clearInterval(answered);
        const color = (answer.message['result'] as { content?: { color?: string } } | undefined)?.content?.color;
        event(stream, { id, result: { content: [{ type: 'text', text: `${token}: ${color ?? 'no answer'}` }] } });
        stream.end();
      }, 5);
    };
    const alice: Record<string, unknown>[] = [];
    const bob: Record<string, unknown>[] = [];
    const [a, b] = await Promise.all([callAs('alice', 'red', alice), callAs('bob', 'blue', bob)]);
    expect(a).toMatchObject({ kind: 'result', result: { content: [{ text: 'alice: red' }] } });
    expect(b).toMatchObject({ kind: 'result', result: { content: [{ text: 'bob: blue' }] } });
    expect([alice.length, bob.length]).toEqual([1, 1]);
  });

  it("an id planted on one user's call does not steer another session's question to that call", async () => {
    let endBobsCall!: () => void;
    onCall = (token, id, stream) => {
      // bob's call: a request the SDK answers itself (ping), its id the one alice's session will use.
      event(stream, { id: 'planted', method: 'ping' });
      endBobsCall = () => {
        event(stream, { id, result: { content: [{ type: 'text', text: 'done' }] } });
        stream.end();
      };
    };
    const bob: Record<string, unknown>[] = [];
    const bobsCall = callAs('bob', 'blue', bob);
    await until(() => answers.some((a) => a.token === 'bob' && a.message['id'] === 'planted'));
    // alice's session asks on its own stream, no call's (and ends it, so the whole of it is read):
    // the broker can ask nobody for it.
    const own = standalone.get('alice')!;
    event(own, { id: 'planted', method: 'elicitation/create', params: QUESTION });
    own.end();
    await until(() => answers.some((a) => a.token === 'alice'));
    endBobsCall();
    await expect(bobsCall).resolves.toMatchObject({ kind: 'result' });
    expect(bob).toEqual([]);
    expect(answers.find((a) => a.token === 'alice')!.message).toMatchObject({ id: 'planted', error: { code: -32601 } });
  });
});
