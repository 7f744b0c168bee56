import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerDeps } from '../../src/broker/brokerDeps.js';
import { createWaitGate } from '../../src/broker/quotas.js';
import { startNavigation } from '../../src/broker/startNavigation.js';
import { createCompletionSignal } from '../../src/broker/completionSignal.js';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { createProviderClient } from '../../src/oauth/providerClient.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { accessTokenFor } from '../../src/secrets/tokenVault.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { digestOf, randomToken } from '../../src/shared/tokens.js';
import { consentAndAuthorize, elicitConnection, openConnectLink } from '../support/connectFlow.js';
import { tokenFor } from '../support/mcpWire.js';
import { plainProviderEntry, startPlainOAuthServer, type PlainOAuthServer } from '../support/plainOAuthServer.js';
import { createTestBrowser, type BrowserResponse } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';
import { TEST_SELF } from '../support/brokerSelf.js';
import { DEFAULT_QUOTAS } from '../../src/config/limits.js';

// A plain OAuth 2.0 provider beside the built-in OIDC Report Service: a real
// oidc-provider asked for no `openid` scope, with opaque access tokens and
// client_secret_basic, configured as a custom PROVIDERS_FILE entry with
// explicit endpoints. Each provider has its own callback path.

interface Flow {
  url: string;
  id: string;
}

describe('a plain OAuth 2.0 provider, and one callback path per provider', () => {
  let plain: PlainOAuthServer;
  let deps: BrokerDeps;
  const { stack } = useBrokerStack({
    retryWaitMs: 200,
    extraProviders: async ({ brokerUrl, tls }) => {
      plain = await startPlainOAuthServer({ tls, redirectUri: `${brokerUrl}/oauth/callback/plain` });
      return [plainProviderEntry(plain)];
    },
  });

  beforeAll(async () => {
    // The broker's own use case starts the flow (no tool uses this provider): the same keys and database as the stack.
    const [provider] = parseProviders([plainProviderEntry(plain)], { allowLoopback: true, self: TEST_SELF });
    const logger = createLogger({ level: 'silent' });
    deps = {
      pool: stack.db.pool,
      clock: systemClock,
      logger,
      providers: new Map([
        ['plain', createProviderClient(provider!, { fetch: stack.fetch, allowLoopback: true, now: () => new Date() })],
      ]),
      box: createSecretBox(
        createKeyring(
          stack.secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
          'secrets',
        ),
      ),
      signal: createCompletionSignal(stack.db.pool, logger),
      publicUrl: new URL(stack.brokerUrl),
      allowLoopback: true,
      navigationTtlSeconds: 900,
      retryWaitMs: 200,
      highRiskTools: new Set(),
      quotas: DEFAULT_QUOTAS,
      waits: createWaitGate(DEFAULT_QUOTAS.waitsPerPrincipal),
    };
  });
  afterEach(async () => {
    await stack.db.pool.query('DELETE FROM secrets');
    await stack.db.pool.query('DELETE FROM connections');
  });
  afterAll(async () => {
    await plain?.close();
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const status = async (flow: Flow) =>
    (await query('SELECT status FROM elicitation_navigations WHERE id = $1', [flow.id]))[0]?.status;
  const events = async (flow: Flow) =>
    query(
      'SELECT event, from_status, to_status, evidence FROM navigation_events WHERE navigation_id = $1 ORDER BY id',
      [flow.id],
    );
  const pending = async (flow: Flow) =>
    query('SELECT provider, redirect_uri FROM oauth_transactions WHERE navigation_id = $1', [flow.id]);

  async function startPlainFlow(): Promise<Flow> {
    const { navigation, connectUrl } = await startNavigation(deps, {
      principal: { iss: stack.dev.idp.issuer, sub: 'alice' },
      clientId: undefined,
      tool: 'plain_profile',
      requestDigest: randomToken(),
      provider: 'plain',
      purpose: 'read your profile',
      lineage: 'mrtr',
    });
    return { url: connectUrl, id: navigation.id };
  }

  /** alice consents on the broker's page and is sent to the authorization endpoint; returns that URL and the browser. */
  async function consentUntilAuthorize(flow: Flow, stopAtCallback: string) {
    const browser = createTestBrowser({ fetch: stack.fetch, stopAt: (u) => u.pathname === stopAtCallback });
    const run = await openConnectLink(stack, flow.url, 'alice', browser);
    const atProvider = await browser.submitForm(
      run.review,
      {},
      { form: '/connect/', stopAt: (u) => u.pathname === '/auth' },
    );
    return { browser, authorizeUrl: new URL(atProvider.location!) };
  }

  /** Signs in and allows at the plain server; returns where the browser stopped (the callback) or ended. */
  async function authorizeAtPlain(
    browser: ReturnType<typeof createTestBrowser>,
    authorizeUrl: URL,
  ): Promise<BrowserResponse> {
    const login = await browser.get(authorizeUrl.href);
    const consent = login.text.includes('name="password"')
      ? await browser.submitForm(login, { login: 'alice', password: DEV_PASSWORD })
      : login;
    return browser.submitForm(consent, {}, { form: '/confirm' });
  }

  it('connects end to end: no nonce, PKCE S256, client_secret_basic, no ID token, the opaque token stored', async () => {
    const flow = await startPlainFlow();
    const { browser, authorizeUrl } = await consentUntilAuthorize(flow, '/never');
    expect(authorizeUrl.origin).toBe(plain.issuer);
    const sent = Object.fromEntries(authorizeUrl.searchParams);
    expect(sent).toMatchObject({
      client_id: plain.clientId,
      response_type: 'code',
      scope: 'profile',
      code_challenge_method: 'S256',
      redirect_uri: `${stack.brokerUrl}/oauth/callback/plain`,
    });
    expect(sent).not.toHaveProperty('nonce');
    expect(sent).not.toHaveProperty('resource');
    expect(await pending(flow)).toEqual([
      { provider: 'plain', redirect_uri: `${stack.brokerUrl}/oauth/callback/plain` },
    ]);

    const done = await authorizeAtPlain(browser, authorizeUrl);
    expect(done.text).toContain('Plain OAuth is connected');
    expect(await status(flow)).toBe('REQUIREMENT_VERIFIED');
    expect(plain.tokenRequests.at(-1)).toEqual({ basic: true });
    const stored = await query(
      "SELECT kind, provider, subject_sub FROM secrets WHERE provider = 'plain' ORDER BY kind",
    );
    expect(stored.map((s) => s.kind)).toContain('access_token');
    expect(stored.every((s) => s.subject_sub === 'alice')).toBe(true);
    // No ID Token: the account is the one the provider's identity call named, recorded with the grant and the flow.
    expect(
      await query(
        "SELECT upstream_subject, upstream_name, granted_scopes, navigation_id FROM connections WHERE provider = 'plain'",
      ),
    ).toEqual([
      { upstream_subject: 'plain-alice', upstream_name: 'alice', granted_scopes: ['profile'], navigation_id: flow.id },
    ]);
    expect((await events(flow)).find((e) => e.event === 'callback_verified')?.evidence).toMatchObject({
      upstreamSubject: 'plain-alice',
      grantedScopes: ['profile'],
    });
    // Opaque to the broker: stored as issued, no JWT to check an audience on.
    const accessToken = await accessTokenFor(deps, { iss: stack.dev.idp.issuer, sub: 'alice' }, 'plain');
    expect(accessToken).toMatch(/^[\w-]{20,}$/);
  });

  it('requires `iss` in the authorization response of a provider with a declared issuer (RFC 9207), and redeems nothing without it', async () => {
    const flow = await startPlainFlow();
    const { browser, authorizeUrl } = await consentUntilAuthorize(flow, '/oauth/callback/plain');
    const stopped = await authorizeAtPlain(browser, authorizeUrl);
    const callback = new URL(stopped.location!);
    expect(callback.searchParams.get('iss')).toBe(plain.issuer);
    callback.searchParams.delete('iss');
    const redeemed = plain.tokenRequests.length;

    const page = await browser.get(callback.href);
    expect(page.status).toBeGreaterThanOrEqual(400);
    expect(plain.tokenRequests.length).toBe(redeemed);
    expect(await query("SELECT kind FROM secrets WHERE provider = 'plain'")).toEqual([]);
    expect(await status(flow)).toBe('OUT_OF_BAND_PENDING');
    expect((await events(flow)).at(-1)).toMatchObject({
      event: 'callback_failed',
      to_status: 'OUT_OF_BAND_PENDING',
      evidence: { error: 'upstream_auth_failed' },
    });
    expect(stack.logs.some((line) => line.includes('response parameter \\"iss\\" (issuer) missing'))).toBe(true);
  });

  it("refuses a code delivered to another provider's callback path (RFC 9700 mix-up) and stores nothing", async () => {
    const alice = await tokenFor(stack, 'alice');
    const elicited = await elicitConnection(stack, alice, 'reports_create', { title: 'Mix-up', body: 'Mix-up: body' });
    const [row] = await query('SELECT id FROM elicitation_navigations WHERE handle_digest = $1', [
      digestOf(new URL(elicited.url).pathname.split('/').pop()!),
    ]);
    const flow: Flow = { url: elicited.url, id: row.id };
    const browser = createTestBrowser({ fetch: stack.fetch, stopAt: (u) => u.pathname.startsWith('/oauth/callback/') });
    const stopped = await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice', browser), 'alice');
    const reportsCallback = new URL(stopped.location!);
    expect(reportsCallback.pathname).toBe('/oauth/callback/reports');
    const redeemedAtPlain = plain.tokenRequests.length;

    // A path of no configured provider claims nothing: the transaction is still there.
    const unknown = await browser.get(new URL(`/oauth/callback/nobody${reportsCallback.search}`, stack.brokerUrl).href);
    expect(unknown.status).toBe(404);
    expect(await pending(flow)).toHaveLength(1);

    const misdelivered = await browser.get(
      new URL(`/oauth/callback/plain${reportsCallback.search}`, stack.brokerUrl).href,
    );
    expect(misdelivered.status).toBe(403);
    expect(misdelivered.text).not.toContain(reportsCallback.searchParams.get('code'));
    expect(plain.tokenRequests.length).toBe(redeemedAtPlain);
    expect(await query('SELECT provider, kind FROM secrets')).toEqual([]);
    expect(await status(flow)).toBe('OUT_OF_BAND_PENDING');
    expect((await events(flow)).at(-1)).toMatchObject({
      event: 'callback_redirect_mismatch',
      evidence: { deliveredTo: 'plain', provider: 'reports' },
    });
    // The transaction is spent: the same response at its own path is refused as already used.
    expect((await browser.get(reportsCallback.href)).status).toBe(400);
    expect(await query('SELECT kind FROM secrets')).toEqual([]);
  });
});
