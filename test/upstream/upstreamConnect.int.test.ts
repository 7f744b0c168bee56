import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerDeps } from '../../src/broker/brokerDeps.js';
import { accessTokenFor } from '../../src/secrets/tokenVault.js';
import { systemClock } from '../../src/shared/clock.js';
import { createFetch } from '../../src/shared/httpClient.js';
import type { UpstreamClient } from '../../src/upstream/upstreamClient.js';
import { UpstreamSetupError } from '../../src/errors/upstreamErrors.js';
import { SESSION_COOKIE } from '../../src/auth/sessionCookie.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { csrfTokenFor } from '../../src/web/middleware/csrf.js';
import { callTool } from '../support/mcpWire.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { operatorCli } from '../support/operatorCli.js';
import { startUpstreamMcp, UPSTREAM_SCOPE, type UpstreamMcp } from '../support/upstreamMcp.js';
import { connectUpstream, upstreamBroker } from '../support/upstreamBroker.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Three upstream MCP servers behind the broker, each the official SDK's server behind bearer auth
// and its own oidc-provider authorization server: one that takes Client ID Metadata Documents (and
// DCR too: the document wins), one with Dynamic Client Registration only, one that knows only a
// pre-registered client. Each is discovered from its 401, registered as the spec orders, and
// connected through the broker's connect page, callback and vault.

let cimd: UpstreamMcp;
let dcr: UpstreamMcp;
let fixed: UpstreamMcp;

const entries = () => [
  { id: 'notes-cimd', kind: 'mcp', url: cimd.url, prefix: 'cimd', registration: 'auto' },
  { id: 'notes-dcr', kind: 'mcp', url: dcr.url, prefix: 'dcr', registration: 'auto', displayName: 'DCR Notes' },
  {
    id: 'notes-static',
    kind: 'mcp',
    url: fixed.url,
    prefix: 'static',
    registration: 'static',
    clientId: fixed.staticClient.id,
    clientSecret: { env: 'NOTES_STATIC_SECRET' },
    scopes: [UPSTREAM_SCOPE],
    issuer: fixed.issuer,
  },
  // The same server with nothing registered: it supports neither documents nor registration.
  { id: 'notes-unregistered', kind: 'mcp', url: fixed.url, prefix: 'unregistered', registration: 'auto' },
];
const readEnv = (name: string) => (name === 'NOTES_STATIC_SECRET' ? fixed.staticClient.secret : undefined);

describe('upstream MCP servers: discovery, registration and the connect flow', () => {
  const { stack } = useBrokerStack({
    extraProviders: async ({ brokerUrl, tls }) => {
      const fetch = createFetch({ extraCaPems: [tls.caPem] });
      [cimd, dcr, fixed] = await Promise.all([
        startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge' }),
        startUpstreamMcp({ tls, fetch, registration: 'dcr', metadata: 'path' }),
        startUpstreamMcp({
          tls,
          fetch,
          registration: 'static',
          metadata: 'root',
          staticRedirectUri: `${brokerUrl}/oauth/callback/notes-static`,
          issuerPath: '/tenant',
        }),
      ]);
      // The stack reads secrets from no environment: the static entry's secret is written in for it.
      return entries().map((e) => (e.id === 'notes-static' ? { ...e, clientSecret: fixed.staticClient.secret } : e));
    },
  });
  let deps: BrokerDeps;
  const alice = () => ({ iss: stack.dev.idp.issuer, sub: 'alice' });
  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;

  // A second instance of the broker on the stack's database and origin, built as the server builds its own.
  const instance = () => upstreamBroker(stack, entries(), { readEnv });
  const upstream = (d: BrokerDeps, id: string) => d.providers.get(id) as UpstreamClient;

  beforeAll(() => {
    deps = instance();
  });
  afterAll(async () => {
    await Promise.all([cimd?.close(), dcr?.close(), fixed?.close()]);
  });

  /** alice connects `provider` through the broker's pages, from a flow the second instance starts. */
  const connect = (provider: string) => connectUpstream(stack, deps, provider);

  /** The stored access token, used at the upstream as a proxied call will: accepted there, for that server. */
  async function callWithStoredToken(server: UpstreamMcp, provider: string) {
    const token = await accessTokenFor({ ...deps, clock: systemClock }, alice(), provider);
    expect(token).toBeDefined();
    const response = await callTool(stack, token!, 'whoami', {}, {}, {}, { baseUrl: new URL(server.url).origin });
    return { status: response.status, text: response.text, accepted: server.accepted.at(-1) };
  }

  const connectionOf = async (provider: string) =>
    query('SELECT upstream_subject, granted_scopes FROM connections WHERE provider = $1 AND subject_sub = $2', [
      provider,
      'alice',
    ]);

  it("CIMD: discovered from the 401 challenge, the broker's document as client_id, connected with the resource indicator", async () => {
    const resolved = await upstream(deps, 'notes-cimd').resolve();
    expect(resolved.discovery).toMatchObject({
      resource: cimd.url,
      resourceMetadataUrl: `${new URL(cimd.url).origin}/.well-known/oauth-protected-resource/mcp`,
      challengedScopes: [UPSTREAM_SCOPE],
      authorizationServer: {
        issuer: cimd.issuer,
        metadataUrl: `${cimd.issuer}/.well-known/oauth-authorization-server`,
        clientIdMetadataDocuments: true,
      },
    });
    // The 401 named its metadata: no well-known URI was guessed.
    expect(cimd.requests).not.toContain('GET /.well-known/oauth-protected-resource');
    const clientId = `${stack.brokerUrl}/oauth/clients/notes-cimd`;
    expect(resolved.registration).toMatchObject({ mode: 'client_id_metadata_document', clientId, clientAuth: 'none' });
    expect(cimd.registrations).toEqual([]);

    const { done } = await connect('notes-cimd');
    expect(done.text).toContain('notes-cimd is connected');
    // Once discovered, its authorization server is a place the broker's forms may send the browser (CSP form-action).
    const csp = (await stack.fetch(`${stack.brokerUrl}/`)).headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(new RegExp(`form-action 'self'[^;]* ${new URL(cimd.issuer).origin}`));
    // The authorization server fetched the broker's document from the broker itself, and accepted it.
    expect(cimd.documentFetches).toContain(clientId);
    expect(cimd.authorizations.at(-1)).toMatchObject({
      client_id: clientId,
      resource: cimd.url,
      scope: UPSTREAM_SCOPE,
      code_challenge_method: 'S256',
      redirect_uri: `${stack.brokerUrl}/oauth/callback/notes-cimd`,
    });
    expect(cimd.tokenRequests.at(-1)).toMatchObject({
      grantType: 'authorization_code',
      resource: cimd.url,
      clientId,
      basic: false,
    });
    // The account at an upstream cannot be known: the connection records none.
    expect(await connectionOf('notes-cimd')).toEqual([{ upstream_subject: null, granted_scopes: [UPSTREAM_SCOPE] }]);
    const call = await callWithStoredToken(cimd, 'notes-cimd');
    expect(call).toMatchObject({ status: 200 });
    expect(call.text).toContain(clientId);
    expect(call.accepted).toEqual({ sub: 'up-alice', aud: cimd.url, clientId });
  });

  it('offers no second account at an upstream, whose accounts cannot be told apart, and refuses one asked for anyway', async () => {
    const browser = createTestBrowser({ fetch: stack.fetch });
    const login = await browser.get(`${stack.brokerUrl}/login?return_to=/connections`);
    const page = await browser.submitForm(login, { login: 'alice', password: DEV_PASSWORD });
    expect(page.text).toContain('<h2>notes-cimd</h2>');
    expect(browser.forms(page).map((f) => f.action)).not.toContain(`${stack.brokerUrl}/connections/add`);
    expect(page.text).not.toContain('Add another');
    const csrf = csrfTokenFor(browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === SESSION_COOKIE)!.value);
    const flowsBefore = await stack.db.pool.query(
      "SELECT count(*)::int AS n FROM elicitation_navigations WHERE lineage = 'reconnect'",
    );
    const forced = await browser.post(
      `${stack.brokerUrl}/connections/add`,
      { _csrf: csrf, provider: 'notes-cimd' },
      { origin: stack.brokerUrl },
    );
    expect(forced.status).toBe(409);
    expect(forced.text).toContain('does not say which account you sign in as');
    const flowsAfter = await stack.db.pool.query(
      "SELECT count(*)::int AS n FROM elicitation_navigations WHERE lineage = 'reconnect'",
    );
    expect(flowsAfter.rows).toEqual(flowsBefore.rows);
  });

  it('DCR: found at the path-inserted well-known URI, registered once for every instance, the secret kept sealed', async () => {
    const resolved = await upstream(deps, 'notes-dcr').resolve();
    expect(resolved.discovery.resourceMetadataUrl).toBe(
      `${new URL(dcr.url).origin}/.well-known/oauth-protected-resource/mcp`,
    );
    expect(resolved.discovery.authorizationServer.clientIdMetadataDocuments).toBe(false);
    expect(resolved.registration).toMatchObject({ mode: 'dynamic', clientAuth: 'client_secret_basic', reused: false });
    expect(dcr.registrations).toEqual([resolved.registration.clientId]);

    const rows = await query('SELECT * FROM upstream_registrations WHERE upstream = $1', ['notes-dcr']);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      issuer: dcr.issuer,
      redirect_uri: `${stack.brokerUrl}/oauth/callback/notes-dcr`,
      client_id: resolved.registration.clientId,
      token_endpoint_auth_method: 'client_secret_basic',
      key_id: stack.secrets.secretKeys[0]!.kid,
    });
    // The secret the authorization server issued is at rest only sealed.
    const issued = (await dcr.provider.Client.find(resolved.registration.clientId)) as unknown as {
      clientSecret: string;
    };
    expect(issued.clientSecret.length).toBeGreaterThan(20);
    expect(resolved.registration.clientSecret.reveal()).toBe(issued.clientSecret);
    expect(JSON.stringify(rows)).not.toContain(issued.clientSecret);
    expect((rows[0].client_secret_sealed as Buffer).includes(Buffer.from(issued.clientSecret))).toBe(false);

    // Another instance finds it stored: no second registration.
    const again = await upstream(instance(), 'notes-dcr').resolve();
    expect(again.registration).toMatchObject({
      mode: 'dynamic',
      clientId: resolved.registration.clientId,
      reused: true,
    });
    expect(again.registration.clientSecret.reveal()).toBe(issued.clientSecret);

    // And so does the stack's own instance, which serves the consent page and the callback.
    const { done } = await connect('notes-dcr');
    expect(done.text).toContain('DCR Notes is connected');
    expect(dcr.registrations).toHaveLength(1);
    expect(dcr.authorizations.at(-1)).toMatchObject({ client_id: resolved.registration.clientId, resource: dcr.url });
    expect(dcr.tokenRequests.at(-1)).toMatchObject({ resource: dcr.url, basic: true });
    const call = await callWithStoredToken(dcr, 'notes-dcr');
    expect(call).toMatchObject({ status: 200 });
    expect(call.accepted).toEqual({ sub: 'up-alice', aud: dcr.url, clientId: resolved.registration.clientId });

    // A stale token is refreshed as any provider's: with the registered client and the resource indicator.
    await query("UPDATE secrets SET expires_at = now() - interval '1 minute' WHERE provider = 'notes-dcr'");
    const refreshed = await callWithStoredToken(dcr, 'notes-dcr');
    expect(dcr.tokenRequests.at(-1)).toMatchObject({ grantType: 'refresh_token', resource: dcr.url, basic: true });
    expect(refreshed).toMatchObject({ status: 200 });
    expect(refreshed.accepted).toEqual({ sub: 'up-alice', aud: dcr.url, clientId: resolved.registration.clientId });
  });

  it("static: the root metadata, an issuer with a path (its path-appended OpenID configuration), the operator's client", async () => {
    const resolved = await upstream(deps, 'notes-static').resolve();
    const origin = new URL(fixed.url).origin;
    expect(resolved.discovery.resourceMetadataUrl).toBe(`${origin}/.well-known/oauth-protected-resource`);
    // Path-inserted first (RFC 9728 §3.1), then the root.
    expect(fixed.requests.filter((r) => r.startsWith('GET /.well-known/'))).toEqual([
      'GET /.well-known/oauth-protected-resource/mcp',
      'GET /.well-known/oauth-protected-resource',
    ]);
    expect(resolved.discovery.authorizationServer).toMatchObject({
      issuer: fixed.issuer,
      metadataUrl: `${fixed.issuer}/.well-known/openid-configuration`,
    });
    expect(resolved.registration).toMatchObject({
      mode: 'static',
      clientId: fixed.staticClient.id,
      clientAuth: 'client_secret_basic',
    });

    const { done } = await connect('notes-static');
    expect(done.text).toContain('notes-static is connected');
    expect(fixed.authorizations.at(-1)).toMatchObject({ client_id: fixed.staticClient.id, resource: fixed.url });
    expect(fixed.tokenRequests.at(-1)).toMatchObject({
      resource: fixed.url,
      clientId: fixed.staticClient.id,
      basic: true,
    });
    const call = await callWithStoredToken(fixed, 'notes-static');
    expect(call).toMatchObject({ status: 200 });
    expect(call.accepted).toMatchObject({ sub: 'up-alice', aud: fixed.url });
  });

  it('names what the operator must register where the server offers neither documents nor registration', async () => {
    const failure = await upstream(deps, 'notes-unregistered')
      .resolve()
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(UpstreamSetupError);
    expect(failure).toMatchObject({ step: 'registration', code: 'unavailable', expose: false });
    expect((failure as Error).message).toBe(
      `Upstream notes-unregistered: ${fixed.issuer} supports neither Client ID Metadata Documents nor Dynamic Client Registration: register a client there with the redirect URI ${stack.brokerUrl}/oauth/callback/notes-unregistered, then set registration: static and its clientId (and clientSecret, for a confidential client) in this entry`,
    );
  });

  it('broker upstreams check resolves each upstream as a first connection would, and names what needs the operator', async () => {
    const file = join(stack.dataDir, 'upstreams.json');
    await writeFile(file, JSON.stringify(entries()));
    const cli = await operatorCli(stack, 'ops', {
      command: 'upstreams',
      env: { PROVIDERS_FILE: file, NOTES_STATIC_SECRET: fixed.staticClient.secret },
    });
    const run = await cli('check', '--json');
    expect(run.code).toBe(1);
    const checks = JSON.parse(run.output.split('\n').find((line) => line.startsWith('['))!) as unknown[];
    const [stored] = await query("SELECT client_id FROM upstream_registrations WHERE upstream = 'notes-dcr'");
    expect(checks).toEqual([
      {
        id: 'notes-cimd',
        ok: true,
        result: `ok: authorization server ${cimd.issuer}; Client ID Metadata Document ${stack.brokerUrl}/oauth/clients/notes-cimd; scopes ${UPSTREAM_SCOPE}`,
      },
      {
        id: 'notes-dcr',
        ok: true,
        result: `ok: authorization server ${dcr.issuer}; registered client ${stored.client_id} (stored, client_secret_basic); scopes ${UPSTREAM_SCOPE}`,
      },
      {
        id: 'notes-static',
        ok: true,
        result: `ok: authorization server ${fixed.issuer}; pre-registered client ${fixed.staticClient.id} (client_secret_basic); scopes ${UPSTREAM_SCOPE}`,
      },
      {
        id: 'notes-unregistered',
        ok: false,
        step: 'registration',
        result: expect.stringContaining(
          `register a client there with the redirect URI ${stack.brokerUrl}/oauth/callback/notes-unregistered`,
        ),
      },
    ]);
    expect(dcr.registrations).toHaveLength(1);
    // Nothing secret in what an operator sees.
    expect(run.output).not.toContain(fixed.staticClient.secret);
  });

  it('serves each upstream its Client ID Metadata Document, and no document for other providers', async () => {
    const response = await stack.fetch(`${stack.brokerUrl}/oauth/clients/notes-cimd`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      client_id: `${stack.brokerUrl}/oauth/clients/notes-cimd`,
      client_name: 'Connect Broker',
      client_uri: stack.brokerUrl,
      redirect_uris: [`${stack.brokerUrl}/oauth/callback/notes-cimd`],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      application_type: 'web',
      token_endpoint_auth_method: 'none',
    });
    expect((await stack.fetch(`${stack.brokerUrl}/oauth/clients/reports`)).status).toBe(404);
  });
});
