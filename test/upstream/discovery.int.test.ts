import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { discoverUpstream } from '../../src/upstream/discovery.js';
import type { UpstreamEntry } from '../../src/providers/upstreamEntry.js';
import { UpstreamSetupError } from '../../src/errors/upstreamErrors.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';
import { TEST_SELF } from '../support/brokerSelf.js';

// Discovery's refusals, against one HTTPS server on loopback playing the MCP server and its
// authorization server with canned answers: each document is checked before anything is taken
// from it, every URL passes the URL policy, and every request has a deadline and a bounded body.

type Route = (req: IncomingMessage, res: ServerResponse) => void;

let dir: string;
let server: HttpsTestServer;
let fetch: Fetch;
let routes: Record<string, Route>;
let requested: string[];

const json =
  (body: unknown, status = 200): Route =>
  (_req, res) =>
    void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const challenge =
  (header: string): Route =>
  (_req, res) =>
    void res.writeHead(401, { 'www-authenticate': header }).end();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'upstream-discovery-'));
  const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
  fetch = createFetch({ extraCaPems: [tls.caPem] });
  server = await listenHttps(tls);
  server.setHandler((req, res) => {
    const path = req.url?.split('?')[0] ?? '';
    requested.push(`${req.method} ${path}`);
    const route = routes[path];
    if (route) route(req, res);
    else res.writeHead(404).end();
  });
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

const url = () => `${server.origin}/mcp`;
const entry = (): UpstreamEntry => ({
  url: url(),
  prefix: 'notes',
  registration: 'auto',
  scopes: undefined,
  issuer: undefined,
});
const discover = (timeoutMs = 2_000) =>
  discoverUpstream('notes', entry(), { fetch, allowLoopback: true, timeoutMs }, { self: TEST_SELF });
const refusal = (timeoutMs?: number) =>
  discover(timeoutMs).then(
    () => {
      throw new Error('expected discovery to fail');
    },
    (err: unknown) => {
      expect(err).toBeInstanceOf(UpstreamSetupError);
      return err as UpstreamSetupError;
    },
  );
const prm = (overrides: Record<string, unknown> = {}) => ({
  resource: url(),
  authorization_servers: [server.origin],
  ...overrides,
});
const asMetadata = (overrides: Record<string, unknown> = {}) => ({
  issuer: server.origin,
  authorization_endpoint: `${server.origin}/authorize`,
  token_endpoint: `${server.origin}/token`,
  code_challenge_methods_supported: ['S256'],
  ...overrides,
});

beforeEach(() => {
  requested = [];
  routes = {
    '/mcp': challenge(`Bearer resource_metadata="${server.origin}/prm", scope="notes:read notes:write"`),
    '/prm': json(prm()),
    '/.well-known/oauth-authorization-server': json(asMetadata()),
  };
});

describe('upstream discovery', () => {
  it("follows the challenge's resource_metadata, takes its scopes, and reads the RFC 8414 metadata", async () => {
    const found = await discover();
    expect(found).toMatchObject({
      resource: url(),
      resourceMetadataUrl: `${server.origin}/prm`,
      challengedScopes: ['notes:read', 'notes:write'],
      authorizationServer: {
        issuer: server.origin,
        metadataUrl: `${server.origin}/.well-known/oauth-authorization-server`,
        tokenEndpointAuthMethods: ['client_secret_basic'],
        clientIdMetadataDocuments: false,
        registrationEndpoint: undefined,
      },
    });
    expect(requested).toEqual(['POST /mcp', 'GET /prm', 'GET /.well-known/oauth-authorization-server']);
  });

  it('falls back to the path-inserted well-known URI, then the root, when the challenge names no metadata', async () => {
    routes['/mcp'] = challenge('Bearer error="invalid_token"');
    routes['/.well-known/oauth-protected-resource'] = json(prm());
    const found = await discover();
    expect(found.resourceMetadataUrl).toBe(`${server.origin}/.well-known/oauth-protected-resource`);
    expect(requested.slice(0, 3)).toEqual([
      'POST /mcp',
      'GET /.well-known/oauth-protected-resource/mcp',
      'GET /.well-known/oauth-protected-resource',
    ]);
  });

  it('treats a malformed challenge as naming nothing (a repeated resource_metadata is ambiguous)', async () => {
    routes['/mcp'] = challenge(`Bearer resource_metadata="${server.origin}/a", resource_metadata="${server.origin}/b"`);
    routes['/.well-known/oauth-protected-resource/mcp'] = json(prm());
    expect((await discover()).resourceMetadataUrl).toBe(`${server.origin}/.well-known/oauth-protected-resource/mcp`);
    expect(requested).not.toContain('GET /a');
  });

  it('guesses no well-known URI when the metadata the challenge names cannot be read', async () => {
    delete routes['/prm'];
    routes['/.well-known/oauth-protected-resource/mcp'] = json(prm());
    const err = await refusal();
    expect(err.step).toBe('resource_metadata');
    expect(err.message).toContain(`${server.origin}/prm answered HTTP 404`);
    expect(requested).not.toContain('GET /.well-known/oauth-protected-resource/mcp');
  });

  it('refuses a server that answers without asking for a token', async () => {
    routes['/mcp'] = json({ jsonrpc: '2.0', id: 1, result: {} });
    const err = await refusal();
    expect(err.step).toBe('challenge');
    expect(err.message).toBe(
      `Upstream notes: the MCP server ${url()} answered HTTP 200 to a request without a token: it asks for no authorization`,
    );
  });

  it('refuses metadata that names another resource (RFC 9728 §3.3)', async () => {
    routes['/prm'] = json(prm({ resource: `${server.origin}/other` }));
    const err = await refusal();
    expect(err.step).toBe('resource_metadata');
    expect(err.message).toContain(`names the resource "${server.origin}/other", not ${url()}`);
    expect(requested).not.toContain('GET /.well-known/oauth-authorization-server');
  });

  it('refuses authorization server metadata for another issuer (RFC 8414 §3.3)', async () => {
    routes['/.well-known/oauth-authorization-server'] = json(asMetadata({ issuer: 'https://honest.example.com' }));
    const err = await refusal();
    expect(err.step).toBe('authorization_server');
    expect(err.message).toContain(`names the issuer "https://honest.example.com", not ${server.origin}`);
  });

  it('refuses an authorization server that does not list S256', async () => {
    routes['/.well-known/oauth-authorization-server'] = json(
      asMetadata({ code_challenge_methods_supported: ['plain'] }),
    );
    expect((await refusal()).message).toContain('does not list S256 in code_challenge_methods_supported');
    delete (routes as Record<string, Route>)['/.well-known/oauth-authorization-server'];
    const { code_challenge_methods_supported: _absent, ...without } = asMetadata();
    routes['/.well-known/openid-configuration'] = json(without);
    expect((await refusal()).message).toContain('does not list S256');
  });

  it('tries RFC 8414 path-inserted, OpenID Connect path-inserted, then path-appended for an issuer with a path', async () => {
    const issuer = `${server.origin}/tenant`;
    routes['/prm'] = json(prm({ authorization_servers: [issuer] }));
    delete routes['/.well-known/oauth-authorization-server'];
    routes['/tenant/.well-known/openid-configuration'] = json(asMetadata({ issuer }));
    const found = await discover();
    expect(found.authorizationServer.metadataUrl).toBe(`${issuer}/.well-known/openid-configuration`);
    expect(requested.slice(2)).toEqual([
      'GET /.well-known/oauth-authorization-server/tenant',
      'GET /.well-known/openid-configuration/tenant',
      'GET /tenant/.well-known/openid-configuration',
    ]);
  });

  it('says what each candidate answered when no metadata is found', async () => {
    delete routes['/.well-known/oauth-authorization-server'];
    const err = await refusal();
    expect(err.message).toBe(
      `Upstream notes: the authorization server metadata could not be read: ${server.origin}/.well-known/oauth-authorization-server answered HTTP 404; ${server.origin}/.well-known/openid-configuration answered HTTP 404`,
    );
  });

  it('sends nothing to a URL the URL policy refuses', async () => {
    routes['/prm'] = json(prm({ authorization_servers: [`https://user:pw@127.0.0.1:${new URL(server.origin).port}`] }));
    const err = await refusal();
    expect(err.step).toBe('authorization_server');
    expect(err.message).toContain('carries user information');
    expect(requested).toEqual(['POST /mcp', 'GET /prm']);
    // An endpoint in otherwise good metadata is held to it too.
    routes['/prm'] = json(prm());
    routes['/.well-known/oauth-authorization-server'] = json(
      asMetadata({ token_endpoint: `${server.origin}/token?client_secret=x` }),
    );
    expect((await refusal()).message).toContain('carries a credential in its query');
  });

  it('refuses a document over the size bound, and a server that does not answer in time', async () => {
    routes['/prm'] = json({ ...prm(), padding: 'x'.repeat(600 * 1024) });
    expect((await refusal()).message).toContain('answered more than');
    routes['/prm'] = () => undefined; // never answers
    const started = Date.now();
    const err = await refusal(300);
    expect(err.message).toContain(`${server.origin}/prm did not answer within 0.3 s`);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
