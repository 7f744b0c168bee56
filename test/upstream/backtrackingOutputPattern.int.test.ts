import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toNodeHandler, type NodeIncomingMessageLike } from '@modelcontextprotocol/node';
import { createMcpHandler, fromJsonSchema, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetch } from '../../src/shared/httpClient.js';
import { createRequestFetch } from '../../src/shared/requestFetch.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { createUpstreamMcp, type UpstreamTool } from '../../src/upstream/upstreamMcpClient.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';

// An upstream chooses its tools' outputSchema and the answers checked against it. A `pattern` such
// as ^(a+)+$ takes V8's backtracking engine time exponential in the answer: 26 characters stopped
// the broker's only thread for seconds, every user's requests with it. The check must keep the
// event loop turning, on both ways the broker calls a tool (its own request, and the SDK client).

const BACKTRACKING = {
  type: 'object',
  properties: { word: { type: 'string', pattern: '^(a+)+$' } },
  required: ['word'],
};
// A pattern RE2 cannot run (a backreference): the tool is refused, never checked another way.
const BACKREFERENCE = {
  type: 'object',
  properties: { word: { type: 'string', pattern: '^(a)\\1$' } },
  required: ['word'],
};
const EVIL = `${'a'.repeat(26)}!`;

let dir: string;
let server: HttpsTestServer;
let tls: Awaited<ReturnType<typeof loadOrCreateLocalTls>>;

/** The upstream server: its tools answer `word`, and it never checks its own schema (it lies about it). */
function hostile(): McpServer {
  const server = new McpServer({ name: 'hostile', version: 'test' }, { capabilities: { tools: {} } });
  const unchecked = { getValidator: () => (input: unknown) => ({ valid: true, data: input, errorMessage: undefined }) };
  for (const [name, schema] of [
    ['echo', BACKTRACKING],
    ['echo_backref', BACKREFERENCE],
  ] as const)
    server.registerTool(
      name,
      {
        description: 'Echoes a word.',
        inputSchema: z.strictObject({ word: z.string() }),
        outputSchema: fromJsonSchema(schema as never, unchecked as never),
      },
      ({ word }) => ({ content: [{ type: 'text', text: word }], structuredContent: { word } }),
    );
  return server;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'backtracking-'));
  tls = await loadOrCreateLocalTls(join(dir, 'tls'));
  server = await listenHttps(tls);
  const serve = toNodeHandler(createMcpHandler(() => hostile(), { legacy: 'reject' }));
  server.setHandler((req, res) => void serve(req as NodeIncomingMessageLike, res));
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

/** Runs `work` while a timer ticks every 5 ms; the longest the event loop went without a tick. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ value: T; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  try {
    const value = await work();
    stallMs = Math.max(stallMs, performance.now() - last);
    return { value, stallMs };
  } finally {
    clearInterval(timer);
  }
}

describe.each([
  ['the broker’s own request (2026-07-28)', 'request'],
  ['the SDK client', 'sdk'],
] as const)('an upstream answer checked against a backtracking outputSchema pattern, through %s', (_name, way) => {
  let mcp: ReturnType<typeof createUpstreamMcp>;
  let tools: UpstreamTool[];
  const url = () => `${server.origin}/mcp`;
  beforeAll(async () => {
    const fetch =
      way === 'request' ? createRequestFetch({ extraCaPems: [tls.caPem] }) : createFetch({ extraCaPems: [tls.caPem] });
    mcp = createUpstreamMcp({ fetch, timeoutMs: 20_000, clientInfo: { name: 'connect-broker', version: 'test' } });
    tools = (await mcp.listTools(url(), 'upstream-token')).tools;
  });
  const call = (name: string, word: string) =>
    mcp.callTool(
      url(),
      'upstream-token',
      name,
      { word },
      tools.find((t) => t.name === name)!,
    );

  it('does not stop the event loop, and refuses the answer that does not match', async () => {
    const { value, stallMs } = await longestStall(() => call('echo', EVIL));
    expect(value).toMatchObject({ kind: 'error', message: expect.stringContaining('output schema') });
    expect(stallMs).toBeLessThan(250);
  });

  it('relays an answer that matches', async () => {
    await expect(call('echo', 'aaaa')).resolves.toMatchObject({
      kind: 'result',
      result: { structuredContent: { word: 'aaaa' } },
    });
  });

  it('refuses a tool whose pattern RE2 cannot run, saying so', async () => {
    const answer = await call('echo_backref', 'aa');
    expect(answer).toMatchObject({ kind: 'error', message: expect.stringContaining('RE2 cannot run it') });
  });
});
