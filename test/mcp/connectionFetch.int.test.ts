import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectionFetch, ConnectionFetchRefusedError, type ConnectionFetch } from '../../src/mcp/connectionFetch.js';
import { UpstreamUnauthorizedError } from '../../src/broker/forgetConnection.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';

const TOKEN = 'at-secret-4711';

describe('the fetch a connection tool gets', () => {
  let dir: string;
  let api: HttpsTestServer;
  let evil: HttpsTestServer;
  let bound: ConnectionFetch;
  const seen: { api: IncomingMessage[]; evil: IncomingMessage[] } = { api: [], evil: [] };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'connection-fetch-'));
    const tls = await loadOrCreateLocalTls(dir);
    [api, evil] = await Promise.all([listenHttps(tls), listenHttps(tls)]);
    evil.setHandler((req, res) => {
      seen.evil.push(req);
      res.end('{}');
    });
    api.setHandler((req, res) => {
      seen.api.push(req);
      if (req.url === '/api/dead') res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
      else if (req.url === '/api/moved') res.writeHead(302, { location: `${evil.origin}/stolen` }).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url }));
    });
    const connection = {
      provider: 'reports',
      displayName: 'Report Service',
      apiBase: `${api.origin}/api`,
      scopes: ['reports:read'],
      apiHeaders: { 'X-Api-Version': '2024-01-01' },
      account: { subject: 'u1', name: undefined },
      grantedScopes: ['reports:read'],
      metadata: {},
    };
    bound = connectionFetch(createFetch({ extraCaPems: [tls.caPem] }), connection, TOKEN);
  });
  afterAll(async () => {
    await Promise.all([api?.close(), evil?.close()]);
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    seen.api.length = 0;
    seen.evil.length = 0;
  });

  it('sends a path below the API base to the API host, with the token in Authorization only', async () => {
    const response = await bound('/reports?page=2', { headers: { accept: 'application/json' } });
    expect(await response.json()).toEqual({ url: '/api/reports?page=2' });
    expect(seen.api).toHaveLength(1);
    expect(seen.api[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen.api[0]!.headers.host).toBe(new URL(api.origin).host);
    // The provider's pinned API headers and a User-Agent go on every call.
    expect(seen.api[0]!.headers['x-api-version']).toBe('2024-01-01');
    expect(seen.api[0]!.headers['user-agent']).toBe('connect-broker');
  });

  it('keeps a path with "@" on the API host (it is a path segment, not userinfo)', async () => {
    const response = await bound(`/@${new URL(evil.origin).host}/x`);
    expect(await response.json()).toEqual({ url: `/api/@${new URL(evil.origin).host}/x` });
    expect(seen.evil).toHaveLength(0);
  });

  const evilHost = () => new URL(evil.origin).host;
  const refused: [string, () => string][] = [
    ['an absolute URL', () => `${evil.origin}/x`],
    ['a scheme-relative URL', () => `//${evilHost()}/x`],
    ['a backslash authority', () => `/\\${evilHost()}/x`],
    ['userinfo glued to the base', () => `@${evilHost()}/x`],
    ['a relative path without "/"', () => 'reports'],
    ['a scheme without slashes', () => `https:${evilHost()}/x`],
    ['".." climbing above the base', () => '/../x'],
    ['".." deeper down', () => '/reports/../../x'],
    ['an encoded ".."', () => '/%2e%2E/x'],
    ['an encoded "/"', () => '/..%2fx'],
    ['an encoded backslash', () => '/%5c%5cevil/x'],
    ['CR/LF in the path', () => '/x HTTP/1.1\r\nHost: evil\r\n\r\n'],
    ['an encoded CR/LF', () => '/x%0d%0aHost:%20evil'],
    ['a fragment', () => '/x#frag'],
  ];
  it.each(refused)('refuses %s, and nothing reaches either host', async (_what, path) => {
    await expect(bound(path())).rejects.toBeInstanceOf(ConnectionFetchRefusedError);
    expect(seen.api).toHaveLength(0);
    expect(seen.evil).toHaveLength(0);
  });

  it('refuses CR/LF in a header, and a header that would replace the token or the host', async () => {
    await expect(bound('/x', { headers: { 'x-note': 'a\r\nAuthorization: Bearer other' } })).rejects.toBeInstanceOf(
      ConnectionFetchRefusedError,
    );
    await expect(bound('/x', { headers: { Authorization: 'Bearer other' } })).rejects.toBeInstanceOf(
      ConnectionFetchRefusedError,
    );
    await expect(bound('/x', { headers: { host: evilHost() } })).rejects.toBeInstanceOf(ConnectionFetchRefusedError);
    expect(seen.api).toHaveLength(0);
  });

  it('does not follow a redirect to another host (the token would go with it)', async () => {
    await expect(bound('/moved')).rejects.toThrow(/redirect/);
    expect(seen.api).toHaveLength(1);
    expect(seen.evil).toHaveLength(0);
  });

  it('throws UpstreamUnauthorizedError on a 401, without the token in its message', async () => {
    const error = await bound('/dead').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamUnauthorizedError);
    expect(String((error as Error).message)).not.toContain(TOKEN);
  });
});
