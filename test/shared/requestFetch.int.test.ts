import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Fetch } from '../../src/shared/httpClient.js';
import { createRequestFetch } from '../../src/shared/requestFetch.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';

// The fetch the broker calls upstream MCP servers with, on undici's request: what its callers (the
// SDK's transport, strictFetch, the upstream client's failure classification) read from fetch's
// answers and failures, against a real HTTPS server on loopback.

type Route = (req: IncomingMessage, res: ServerResponse) => void;

let dir: string;
let server: HttpsTestServer;
let fetch: Fetch;
let caPem: string;
let routes: Record<string, Route>;
let seen: { method: string; path: string; headers: IncomingMessage['headers']; body: string }[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'request-fetch-'));
  const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
  caPem = tls.caPem;
  fetch = createRequestFetch({ extraCaPems: [caPem], timeoutMs: 500 });
  server = await listenHttps(tls);
  server.setHandler((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const path = req.url ?? '';
      seen.push({ method: req.method ?? '', path, headers: req.headers, body });
      (routes[path] ?? ((_q, r) => void r.writeHead(404).end()))(req, res);
    });
  });
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  routes = {};
  seen = [];
});

describe('createRequestFetch', () => {
  it('sends the method, headers and body, and answers a Response with the status, headers and body', async () => {
    routes['/mcp'] = (_req, res) =>
      void res
        .writeHead(202, [
          ['content-type', 'application/json'],
          ['set-cookie', 'a=1'],
          ['set-cookie', 'b=2'],
          ['mcp-session-id', 's-1'],
        ])
        .end(JSON.stringify({ jsonrpc: '2.0', id: 7, result: { ok: true } }));
    const response = await fetch(`${server.origin}/mcp`, {
      method: 'POST',
      headers: new Headers({ 'content-type': 'application/json', authorization: 'Bearer upstream-canary' }),
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call' }),
    });
    expect(response).toBeInstanceOf(Response);
    expect([response.status, response.ok]).toEqual([202, true]);
    expect(response.headers.get('mcp-session-id')).toBe('s-1');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 7, result: { ok: true } });
    expect(seen).toMatchObject([
      {
        method: 'POST',
        path: '/mcp',
        headers: { 'content-type': 'application/json', authorization: 'Bearer upstream-canary' },
        body: '{"jsonrpc":"2.0","id":7,"method":"tools/call"}',
      },
    ]);
  });

  it('sends URLSearchParams as a form, and answers statuses that have no body', async () => {
    routes['/token'] = (_req, res) => void res.writeHead(204).end();
    const response = await fetch(`${server.origin}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'r t' }),
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(seen[0]).toMatchObject({
      headers: { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8' },
      body: 'grant_type=refresh_token&refresh_token=r+t',
    });
  });

  it('passes an event stream on as it comes: the first event is read before the server ends the answer', async () => {
    let finish: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (finish = resolve));
    routes['/stream'] = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message\ndata: {"first":true}\n\n');
      void ended.then(() => res.end('event: message\ndata: {"last":true}\n\n'));
    };
    const response = await fetch(`${server.origin}/stream`, { method: 'POST', body: '{}' });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    expect(first.value).toContain('{"first":true}');
    finish();
    let rest = '';
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += next.value;
    expect(rest).toContain('{"last":true}');
  });

  it('never follows a redirect: the 3xx is the answer and its target is not asked', async () => {
    routes['/moved'] = (_req, res) => void res.writeHead(302, { location: `${server.origin}/elsewhere` }).end();
    routes['/elsewhere'] = (_req, res) => void res.writeHead(200).end('followed');
    const response = await fetch(`${server.origin}/moved`);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(`${server.origin}/elsewhere`);
    expect(seen.map((s) => s.path)).toEqual(['/moved']);
  });

  it('gives up at its deadline, and on the caller’s signal, with the error names fetch gives', async () => {
    routes['/silent'] = () => undefined;
    const started = Date.now();
    await expect(fetch(`${server.origin}/silent`)).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(2_000);
    const caller = new AbortController();
    const pending = fetch(`${server.origin}/silent`, { signal: caller.signal });
    caller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('fails with the socket’s code when nothing was sent (nothing listens on the port)', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as { port: number };
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const failure = await fetch(`https://127.0.0.1:${port}/mcp`, { method: 'POST', body: '{}' }).catch(
      (err: unknown) => err,
    );
    expect(failure).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('refuses an answer over its bound (chunked, so only the bytes read can tell), and takes one within it', async () => {
    const small = createRequestFetch({ extraCaPems: [caPem], timeoutMs: 2_000, maxBytes: 64 * 1024 });
    let written = 0;
    routes['/big'] = (_req, res) => {
      // Chunked (no Content-Length), written until the client goes away or 4 MiB are out.
      res.writeHead(200, { 'content-type': 'application/json' });
      const more = () => {
        while (written < 4 * 1024 * 1024 && !res.destroyed) {
          written += 16 * 1024;
          if (!res.write(Buffer.alloc(16 * 1024, 0x20))) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    };
    await expect(small(`${server.origin}/big`)).rejects.toMatchObject({
      name: 'FetchRefusedError',
      message: expect.stringContaining('more than 65536 bytes'),
    });
    routes['/fits'] = (_req, res) => void res.writeHead(200).end(Buffer.alloc(60 * 1024, 0x61));
    expect((await (await small(`${server.origin}/fits`)).arrayBuffer()).byteLength).toBe(60 * 1024);
  });

  it('refuses a body type the broker never sends, before anything is sent', async () => {
    await expect(fetch(`${server.origin}/mcp`, { method: 'POST', body: new Blob(['x']) })).rejects.toThrow(
      /strings, bytes or URLSearchParams/,
    );
    await expect(fetch(new Request(`${server.origin}/mcp`))).rejects.toThrow(/not a Request/);
    expect(seen).toEqual([]);
  });
});
