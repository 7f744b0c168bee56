import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FetchRefusedError } from '../../src/shared/httpClient.js';
import { createRequestFetch, type RequestFetch } from '../../src/shared/requestFetch.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { createOutputValidator } from '../../src/upstream/outputValidator.js';
import { newWire, plainCall, statelessCall, type StatelessCall } from '../../src/upstream/statelessCall.js';
import { freePorts } from '../support/brokerProcess.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';

// The broker's own tools/call to a 2026-07-28 upstream, against a real HTTPS server on loopback
// answering each way the SDK client's transport reads: what comes back, and what `wire` says reached
// the upstream when nothing usable did (upstreamMcpClient.ts decides from it whether it may have been done).

type Answer = (body: { id: number }, res: ServerResponse) => void;

let dir: string;
let server: HttpsTestServer;
let fetch: RequestFetch;
let answer: Answer;
let seen: { headers: IncomingMessage['headers']; body: Record<string, unknown> }[];

const TOOL = { inputSchema: { type: 'object' } };
const LISTED = {
  inputSchema: { type: 'object' },
  outputSchema: {
    type: 'object',
    properties: { memos: { type: 'array', items: { type: 'string' } } },
    required: ['memos'],
  },
};
const TEXT = { content: [{ type: 'text', text: 'done' }] };

function call(overrides: Partial<StatelessCall> = {}): StatelessCall {
  return {
    url: `${server.origin}/mcp`,
    token: 'upstream-token-canary',
    name: 'list',
    params: { name: 'list', arguments: { q: 'x' } },
    definition: TOOL,
    clientInfo: { name: 'connect-broker', version: 'test' },
    capabilities: { elicitation: { form: {} } },
    timeoutMs: 1_000,
    maxBytes: 64 * 1024,
    validator: createOutputValidator(),
    ...overrides,
  };
}

const json = (res: ServerResponse, status: number, value: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stateless-call-'));
  const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
  fetch = createRequestFetch({ extraCaPems: [tls.caPem], timeoutMs: 2_000 });
  server = await listenHttps(tls);
  server.setHandler((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      const body = JSON.parse(text) as { id: number };
      seen.push({ headers: req.headers, body: body as unknown as Record<string, unknown> });
      answer(body, res);
    });
  });
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  seen = [];
});

describe('a tools/call to a 2026-07-28 upstream without the SDK client', () => {
  it('sends what the SDK client sends and relays a JSON answer', async () => {
    answer = (body, res) =>
      json(res, 200, { jsonrpc: '2.0', id: body.id, result: { ...TEXT, resultType: 'complete' } });
    const wire = newWire();
    await expect(statelessCall(fetch.post, wire, call())).resolves.toEqual({
      kind: 'result',
      result: { ...TEXT, resultType: 'complete' },
    });
    expect(wire).toMatchObject({ sent: true, status: undefined, failure: undefined });
    const [request] = seen;
    expect(request!.headers).toMatchObject({
      authorization: 'Bearer upstream-token-canary',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'list',
      accept: 'application/json, text/event-stream',
    });
    expect(request!.body).toMatchObject({
      jsonrpc: '2.0',
      method: 'tools/call',
      params: {
        name: 'list',
        arguments: { q: 'x' },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'connect-broker', version: 'test' },
          'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
        },
      },
    });
  });

  it('reads an event stream past notifications and other ids to the call answer, and stops there', async () => {
    answer = (body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } })}\n\n`,
      );
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: body.id + 1000, result: { content: [] } })}\n\n`);
      // One event over two lines and two chunks.
      const event = JSON.stringify({ jsonrpc: '2.0', id: body.id, result: TEXT });
      res.write(`data: ${event.slice(0, 20)}`);
      setTimeout(() => res.write(`${event.slice(20)}\n\n`), 20);
      // The stream stays open: the answer is taken without waiting for its end.
    };
    await expect(statelessCall(fetch.post, newWire(), call())).resolves.toEqual({ kind: 'result', result: TEXT });
  });

  it("relays the upstream's JSON-RPC error, on 200 and on 400, and an input_required result as it came", async () => {
    answer = (body, res) =>
      json(res, 200, { jsonrpc: '2.0', id: body.id, error: { code: -32602, message: 'no such memo' } });
    await expect(statelessCall(fetch.post, newWire(), call())).resolves.toEqual({
      kind: 'error',
      code: -32602,
      message: 'no such memo',
    });
    answer = (body, res) => json(res, 400, { jsonrpc: '2.0', id: body.id, error: { code: -32600, message: 'bad' } });
    await expect(statelessCall(fetch.post, newWire(), call())).resolves.toEqual({
      kind: 'error',
      code: -32600,
      message: 'bad',
    });
    const asked = {
      resultType: 'input_required',
      inputRequests: { q: { method: 'elicitation/create' } },
      requestState: 's',
    };
    answer = (body, res) => json(res, 200, { jsonrpc: '2.0', id: body.id, result: asked });
    await expect(statelessCall(fetch.post, newWire(), call())).resolves.toEqual({ kind: 'result', result: asked });
  });

  it('checks structured content against the listed output schema, as the SDK client does', async () => {
    answer = (body, res) =>
      json(res, 200, { jsonrpc: '2.0', id: body.id, result: { ...TEXT, structuredContent: { memos: [1] } } });
    await expect(statelessCall(fetch.post, newWire(), call({ definition: LISTED }))).resolves.toMatchObject({
      kind: 'error',
      message: expect.stringMatching(/does not match the tool's output schema/),
    });
    answer = (body, res) => json(res, 200, { jsonrpc: '2.0', id: body.id, result: TEXT });
    await expect(statelessCall(fetch.post, newWire(), call({ definition: LISTED }))).resolves.toMatchObject({
      kind: 'error',
      message: expect.stringMatching(/did not return structured content/),
    });
    const bad = {
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object', properties: { a: { pattern: '(' } } },
    };
    await expect(statelessCall(fetch.post, newWire(), call({ definition: bad }))).resolves.toMatchObject({
      kind: 'error',
      message: expect.stringMatching(/has an invalid outputSchema/),
    });
    // Refused before it was sent: the two answered calls above reached the server, this one did not.
    expect(seen).toHaveLength(2);
  });

  it('throws with what reached the upstream when no usable answer came', async () => {
    const failing: [string, Answer, { status?: number; refused?: boolean }][] = [
      ['a 401', (_b, res) => void res.writeHead(401).end(), { status: 401 }],
      [
        'a 500 with a JSON-RPC error',
        (b, res) => json(res, 500, { jsonrpc: '2.0', id: b.id, error: { code: 1, message: 'x' } }),
        { status: 500 },
      ],
      ['a 404', (_b, res) => void res.writeHead(404).end(), { status: 404 }],
      [
        'a redirect',
        (_b, res) => void res.writeHead(307, { location: 'https://elsewhere.example/' }).end(),
        { refused: true },
      ],
      ['garbage', (_b, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc'), {}],
      ['another id', (b, res) => json(res, 200, { jsonrpc: '2.0', id: b.id + 1, result: TEXT }), {}],
      ['not a tool result', (b, res) => json(res, 200, { jsonrpc: '2.0', id: b.id, result: { content: 'x' } }), {}],
      ['an accepted notification (202)', (_b, res) => void res.writeHead(202).end(), {}],
      [
        'too much',
        (b, res) =>
          json(res, 200, {
            jsonrpc: '2.0',
            id: b.id,
            result: { content: [{ type: 'text', text: 'x'.repeat(70_000) }] },
          }),
        { refused: true },
      ],
    ];
    for (const [what, route, expected] of failing) {
      answer = route;
      const wire = newWire();
      const failed = await statelessCall(fetch.post, wire, call()).then(
        () => new Error(`${what} was taken as an answer`),
        (err: unknown) => err,
      );
      expect(failed, what).toBeInstanceOf(expected.refused ? FetchRefusedError : Error);
      expect(wire.sent, what).toBe(true);
      expect(wire.status, what).toBe(expected.status);
      expect(wire.failure, what).toBe(failed);
    }
  });

  it('a deadline passed is a failure after sending; a refused connection was never sent', async () => {
    answer = () => undefined;
    const slow = newWire();
    await expect(statelessCall(fetch.post, slow, call({ timeoutMs: 200 }))).rejects.toThrow();
    expect(slow.sent).toBe(true);
    const [closed] = await freePorts(1);
    const refused = newWire();
    await expect(
      statelessCall(fetch.post, refused, call({ url: `https://127.0.0.1:${closed}/mcp` })),
    ).rejects.toThrow();
    expect(refused.sent).toBe(false);
  });

  it('leaves a tool whose input schema declares x-mcp-header parameters to the SDK client', () => {
    expect(plainCall(TOOL)).toBe(true);
    expect(
      plainCall({
        inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } },
      }),
    ).toBe(false);
  });
});
