import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_TOKEN_CLIENT_ID } from '../../src/dev/devTokenClient.js';
import { loadOrCreateDevSecrets } from '../../src/dev/devSecrets.js';
import { startLocalDevStack, type DevStack } from '../../src/dev/devStack.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { createRender } from '../../src/web/render.js';
import { authorizationUrl, authorizeCode, createPkce, type AuthorizeResult } from '../support/devOAuth.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';
import { createTestBrowser } from '../support/testBrowser.js';

// The development identity provider of `npm start` (startLocalDevStack), as an MCP host
// that does its own OAuth meets it: Dynamic Client Registration (RFC 7591), Client ID
// Metadata Documents, loopback redirect URIs on any port (RFC 8252 §7.3).

const BROKER_URL = 'https://127.0.0.1:9';
const MCP_RESOURCE = `${BROKER_URL}/mcp`;

let dir: string;
let tls: TlsMaterial;
let fetch: Fetch;
let dev: DevStack;
let issuer: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dev-registration-'));
  tls = await loadOrCreateLocalTls(join(dir, 'tls'));
  fetch = createFetch({ extraCaPems: [tls.caPem] });
  const secrets = await loadOrCreateDevSecrets(dir);
  dev = await startLocalDevStack({
    tls,
    fetch,
    secrets,
    render: createRender({ cache: false }),
    logger: createLogger({ level: 'silent' }),
    brokerUrl: BROKER_URL,
  });
  issuer = dev.idp.issuer;
});
afterAll(async () => {
  await dev?.close(0);
  await rm(dir, { recursive: true, force: true });
});

async function register(metadata: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(metadata),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const publicClient = (redirectUris: string[]) => ({
  client_name: 'Example MCP host',
  redirect_uris: redirectUris,
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
  scope: 'mcp offline_access',
});

/** Sign in as alice and press Allow if asked; the code is read from the redirect, which is not followed. */
function authorizeAsAlice(clientId: string, redirectUri: string): Promise<AuthorizeResult> {
  const browser = createTestBrowser({ fetch });
  return authorizeCode(browser, {
    issuer,
    client: { clientId, clientSecret: '', redirectUri },
    scope: 'mcp',
    resource: MCP_RESOURCE,
    login: 'alice',
    allowConsent: true,
  });
}

/** A public client's token request (no client authentication, PKCE only). */
async function redeem(clientId: string, redirectUri: string, authorized: AuthorizeResult) {
  const response = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: clientId,
      code: authorized.code,
      redirect_uri: redirectUri,
      code_verifier: authorized.pkce.verifier,
      resource: MCP_RESOURCE,
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function expectMcpToken(body: Record<string, unknown>, clientId: string): void {
  expect(decodeJwt(String(body['access_token']))).toMatchObject({
    iss: issuer,
    aud: MCP_RESOURCE,
    sub: 'alice',
    scope: 'mcp',
    client_id: clientId,
  });
}

describe('the development identity provider for MCP hosts', () => {
  it('advertises registration and Client ID Metadata Documents in its metadata', async () => {
    const metadata = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    expect(metadata).toMatchObject({
      registration_endpoint: `${issuer}/reg`,
      client_id_metadata_document_supported: true,
      code_challenge_methods_supported: ['S256'],
    });
  });

  it('registers a public loopback client (RFC 7591) and issues it an MCP token on another port than it registered', async () => {
    const registered = await register(publicClient(['http://127.0.0.1:50001/oauth/callback']));
    expect(registered.status).toBe(201);
    const clientId = String(registered.body['client_id']);
    expect(registered.body).toMatchObject({ token_endpoint_auth_method: 'none', application_type: 'native' });
    expect(registered.body['client_secret']).toBeUndefined();

    const redirectUri = 'http://127.0.0.1:50777/oauth/callback';
    const authorized = await authorizeAsAlice(clientId, redirectUri);
    expect(authorized.callback.origin).toBe('http://127.0.0.1:50777');
    const token = await redeem(clientId, redirectUri, authorized);
    expect(token.status).toBe(200);
    expectMcpToken(token.body, clientId);
  });

  it('refuses to register a client whose redirect URI leaves the machine', async () => {
    for (const uri of ['https://mcp-host.example/oauth/callback', 'http://192.168.1.5:8080/oauth/callback']) {
      const registered = await register(publicClient(['http://127.0.0.1/oauth/callback', uri]));
      expect(registered).toMatchObject({ status: 400, body: { error: 'invalid_client_metadata' } });
    }
  });

  it('accepts the dev-token client with a loopback redirect URI on any port, IPv4 and IPv6 (RFC 8252 §7.3)', async () => {
    for (const redirectUri of ['http://127.0.0.1:53682/dev-token/callback', 'http://[::1]:53682/dev-token/callback']) {
      const authorized = await authorizeAsAlice(DEV_TOKEN_CLIENT_ID, redirectUri);
      expect(authorized.callback.href.startsWith(redirectUri)).toBe(true);
    }
  });

  it('still refuses a redirect URI that differs in more than the loopback port', async () => {
    const browser = createTestBrowser({ fetch });
    const pkce = createPkce();
    for (const redirectUri of ['http://127.0.0.1:53682/other/callback', 'https://127.0.0.1:53682/dev-token/callback']) {
      const params = {
        client_id: DEV_TOKEN_CLIENT_ID,
        response_type: 'code',
        redirect_uri: redirectUri,
        scope: 'mcp',
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
      };
      const page = await browser.get(authorizationUrl(issuer, params), { stopAt: () => true });
      expect(page.status).toBe(400);
      expect(page.text).toContain('redirect_uri did not match any of the client');
    }
  });

  it("asks a self-registered client's user for consent, shows where the code goes, and lets the form redirect there", async () => {
    const registered = await register(publicClient(['http://[::1]/oauth/callback', 'http://127.0.0.1/oauth/callback']));
    const clientId = String(registered.body['client_id']);
    for (const [redirectUri, formTarget] of [
      ['http://127.0.0.1:50999/oauth/callback', 'http://127.0.0.1:50999'],
      // CSP has no syntax for IPv6 hosts: the scheme stands in.
      ['http://[::1]:50999/oauth/callback', 'http:'],
    ] as const) {
      const params = {
        client_id: clientId,
        response_type: 'code',
        redirect_uri: redirectUri,
        scope: 'mcp',
        resource: MCP_RESOURCE,
        code_challenge: createPkce().challenge,
        code_challenge_method: 'S256',
        state: 's',
      };
      const browser = createTestBrowser({ fetch });
      const login = await browser.get(authorizationUrl(issuer, params));
      expect(formAction(login.headers)).toContain(formTarget);
      const consent = await browser.submitForm(login, { login: 'alice', password: 'connect-dev' });
      expect(consent.text).toContain('Allow access?');
      expect(consent.text).toContain(clientId);
      expect(consent.text).toContain(new URL(redirectUri).origin);
      expect(formAction(consent.headers)).toContain(formTarget);
    }
  });

  describe('with a Client ID Metadata Document', () => {
    let documents: HttpsTestServer;
    let untrusted: HttpsTestServer;

    const document = (clientId: string) => ({
      client_id: clientId,
      client_name: 'Example MCP host',
      redirect_uris: ['http://127.0.0.1/oauth/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
    });

    beforeAll(async () => {
      documents = await listenHttps(tls);
      documents.setHandler((req, res) => {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(document(`${documents.origin}${req.url ?? ''}`)));
      });
      // A certificate from a CA the identity provider does not trust.
      untrusted = await listenHttps(await loadOrCreateLocalTls(join(dir, 'other-tls')));
      untrusted.setHandler((req, res) => {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(document(`${untrusted.origin}${req.url ?? ''}`)));
      });
    });
    afterAll(async () => {
      await documents?.close();
      await untrusted?.close();
    });

    it('fetches the document over verified TLS and issues an MCP token to its client on any loopback port', async () => {
      const clientId = `${documents.origin}/oauth/client-metadata.json`;
      const redirectUri = 'http://127.0.0.1:51234/oauth/callback';
      const authorized = await authorizeAsAlice(clientId, redirectUri);
      const token = await redeem(clientId, redirectUri, authorized);
      expect(token.status).toBe(200);
      expectMcpToken(token.body, clientId);
    });

    it('refuses a client whose document is served with a certificate it cannot verify', async () => {
      const clientId = `${untrusted.origin}/oauth/client-metadata.json`;
      const params = {
        client_id: clientId,
        response_type: 'code',
        redirect_uri: 'http://127.0.0.1:51234/oauth/callback',
        scope: 'mcp',
        code_challenge: createPkce().challenge,
        code_challenge_method: 'S256',
      };
      const page = await createTestBrowser({ fetch }).get(authorizationUrl(issuer, params), { stopAt: () => true });
      expect(page.status).toBe(400);
      expect(page.text).toContain('invalid_client');
    });
  });
});

function formAction(headers: Headers): string[] {
  const csp = headers.get('content-security-policy') ?? '';
  const directive = csp.split(';').find((d) => d.trim().startsWith('form-action ')) ?? '';
  return directive.trim().split(/\s+/).slice(1);
}
