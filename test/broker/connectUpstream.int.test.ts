import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { createProviderClient } from '../../src/oauth/providerClient.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { Secret } from '../../src/shared/secret.js';
import { digestOf, randomToken } from '../../src/shared/tokens.js';
import { consentAndAuthorize, elicitConnection, openConnectLink } from '../support/connectFlow.js';
import {
  mintAccessToken,
  reportsTokenEndpoint,
  tokenResponse,
  type AccessTokenClaims,
} from '../support/forgedTokens.js';
import { createTestBrowser, type BrowserResponse, type TestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';
import { TEST_SELF } from '../support/brokerSelf.js';
import { errorTitleOf } from '../../src/web/errorTitle.js';

// Faults between the broker and the provider: a wrong
// PKCE verifier, a mixed-up `iss`, a token for another audience, a token
// endpoint that fails, answers garbage or hangs, and discovery metadata that
// points off the issuer's host. Each refusal stores nothing, leaves the flow
// OUT_OF_BAND_PENDING, and a fresh consent afterwards still connects.

interface Flow {
  url: string;
  id: string;
}

const ALICE_AT_REPORTS = 'rs-user-alice';

describe('connect flow faults at the provider', () => {
  const { stack, tokens } = useBrokerStack({ retryWaitMs: 200 }, { users: ['alice'] });

  afterEach(async () => {
    nock.cleanAll();
    await stack.db.pool.query('DELETE FROM secrets');
    await stack.db.pool.query('DELETE FROM connections');
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const navigation = async (flow: Flow) =>
    (await query('SELECT status, row_version, updated_at FROM elicitation_navigations WHERE id = $1', [flow.id]))[0];
  const events = async (flow: Flow) =>
    query(
      'SELECT event, from_status, to_status, evidence FROM navigation_events WHERE navigation_id = $1 ORDER BY id',
      [flow.id],
    );
  const pendingTransaction = async (flow: Flow) =>
    (
      await query(
        'SELECT state_digest, code_verifier_sealed, key_id, nonce FROM oauth_transactions WHERE navigation_id = $1',
        [flow.id],
      )
    )[0];

  async function elicit(title: string): Promise<Flow> {
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', { title, body: `${title}: body` });
    const [row] = await query('SELECT id FROM elicitation_navigations WHERE handle_digest = $1', [
      digestOf(new URL(elicited.url).pathname.split('/').pop()!),
    ]);
    return { url: elicited.url, id: row.id };
  }

  /** alice consents and authorizes at the Report Service; her browser stops before delivering the callback. */
  async function authorizeUntilCallback(flow: Flow): Promise<{ browser: TestBrowser; callbackUrl: string }> {
    const browser = createTestBrowser({ fetch: stack.fetch, stopAt: (u) => u.pathname === '/oauth/callback/reports' });
    const stopped = await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice', browser), 'alice');
    expect(stopped.location).toMatch(new RegExp(`^${stack.brokerUrl}/oauth/callback/reports\\?`));
    expect((await navigation(flow)).status).toBe('OUT_OF_BAND_PENDING');
    return { browser, callbackUrl: stopped.location! };
  }

  /** The error the broker logged for the request that answered `page` (5xx only). */
  const failureLogged = (page: BrowserResponse) =>
    stack.logs.find((line) => line.includes(page.headers.get('x-request-id')!) && line.includes('request failed'));

  /** The refusal page: readable, no stack trace, no token, no authorization code. */
  function expectCleanErrorPage(page: BrowserResponse, callbackUrl: string): void {
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain(`<h1>${errorTitleOf(page.status)}</h1>`);
    expect(page.text).not.toMatch(/\n\s+at |Error:|node_modules|eyJ[\w-]+\.eyJ/);
    expect(page.text).not.toContain(new URL(callbackUrl).searchParams.get('code'));
  }

  /** Nothing stored, the flow still waits for the provider, the refusal is in the ledger, and a fresh consent connects. */
  async function expectRefusedAndRecoverable(
    flow: Flow,
    before: Record<string, unknown>,
    error: string,
  ): Promise<void> {
    expect(await query('SELECT kind FROM secrets')).toEqual([]);
    expect(await navigation(flow)).toEqual(before);
    expect((await events(flow)).at(-1)).toMatchObject({
      event: 'callback_failed',
      from_status: 'OUT_OF_BAND_PENDING',
      to_status: 'OUT_OF_BAND_PENDING',
      evidence: { error },
    });
    expect(await pendingTransaction(flow)).toBeUndefined();
    nock.cleanAll();
    const done = await consentAndAuthorize(stack, await openConnectLink(stack, flow.url, 'alice'), 'alice');
    expect(done.text).toContain('Report Service is connected');
    expect((await navigation(flow)).status).toBe('REQUIREMENT_VERIFIED');
    expect(await query('SELECT kind FROM secrets ORDER BY kind')).toEqual([
      { kind: 'access_token' },
      { kind: 'refresh_token' },
    ]);
    expect(await query('SELECT upstream_subject FROM connections')).toEqual([{ upstream_subject: ALICE_AT_REPORTS }]);
  }

  it('refuses a callback whose PKCE verifier does not match, stores nothing, and stays recoverable', async () => {
    const flow = await elicit('Wrong verifier');
    const { browser, callbackUrl } = await authorizeUntilCallback(flow);
    const box = createSecretBox(
      createKeyring(
        stack.secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
        'secrets',
      ),
    );
    const pending = await pendingTransaction(flow);
    const aad = `pkce\n${(pending.state_digest as Buffer).toString('hex')}\n${flow.id}`;
    const original = box.open({ ciphertext: pending.code_verifier_sealed, keyId: pending.key_id }, aad);
    const other = box.seal(randomToken(), aad);
    expect(box.open(other, aad)).not.toBe(original);
    await query('UPDATE oauth_transactions SET code_verifier_sealed = $1, key_id = $2 WHERE state_digest = $3', [
      other.ciphertext,
      other.keyId,
      pending.state_digest,
    ]);
    const before = await navigation(flow);

    const page = await browser.get(callbackUrl);
    expect(page.status).toBe(400);
    expect(page.text).toContain('already used or has expired');
    expectCleanErrorPage(page, callbackUrl);
    await expectRefusedAndRecoverable(flow, before, 'invalid_input');
  });

  it.each([
    {
      name: 'names another issuer',
      tamper: (params: URLSearchParams) => params.set('iss', 'https://evil.example.test'),
      why: /unexpected \\"iss\\" \(issuer\) response parameter value/,
    },
    {
      name: 'leaves iss out',
      tamper: (params: URLSearchParams) => params.delete('iss'),
      why: /response parameter \\"iss\\" \(issuer\) missing/,
    },
  ])('refuses a callback that $name (RFC 9207), redeems no code and stores nothing', async ({ tamper, why }) => {
    const flow = await elicit('Mixed-up issuer');
    const { browser, callbackUrl } = await authorizeUntilCallback(flow);
    const mixedUp = new URL(callbackUrl);
    expect(mixedUp.searchParams.get('iss')).toBe(stack.dev.reports.issuer);
    tamper(mixedUp.searchParams);
    const token = reportsTokenEndpoint(stack).reply(500);
    const before = await navigation(flow);

    const page = await browser.get(mixedUp.href);
    expect(page.status).toBe(502);
    expectCleanErrorPage(page, callbackUrl);
    expect(failureLogged(page)).toMatch(why);
    expect(token.isDone()).toBe(false); // openid-client refused before redeeming the code
    await expectRefusedAndRecoverable(flow, before, 'upstream_auth_failed');
  });

  // Every refused provider access token ends the same way: nothing stored, the flow recoverable.
  const refusedTokens: { name: string; claims: Partial<AccessTokenClaims>; why: RegExp }[] = [
    {
      name: 'issued for another audience',
      claims: { audience: 'https://calendar.example.test/api' },
      why: /unexpected \\"aud\\" claim value/,
    },
    { name: 'without an expiry', claims: { expiresInSeconds: null }, why: /missing required \\"exp\\" claim/ },
  ];

  it.each(refusedTokens)('refuses a provider access token $name and stores nothing', async ({ name, claims, why }) => {
    const flow = await elicit(`Token ${name}`);
    const { browser, callbackUrl } = await authorizeUntilCallback(flow);
    const { nonce } = await pendingTransaction(flow);
    const accessToken = await mintAccessToken(stack, { sub: ALICE_AT_REPORTS, ...claims });
    const token = reportsTokenEndpoint(stack).reply(
      200,
      await tokenResponse(stack, { sub: ALICE_AT_REPORTS, nonce, accessToken, refreshToken: randomToken() }),
    );
    const before = await navigation(flow);

    const page = await browser.get(callbackUrl);
    expect(token.isDone()).toBe(true);
    expect(page.status).toBe(502);
    expectCleanErrorPage(page, callbackUrl);
    expect(page.text).not.toContain(accessToken);
    expect(stack.logs.filter((line) => line.includes(accessToken.split('.')[1]!))).toEqual([]);
    // Refused for this reason, not for anything else (the same page covers every token check).
    expect(failureLogged(page)).toMatch(why);
    await expectRefusedAndRecoverable(flow, before, 'upstream_auth_failed');
  });

  const failures: {
    name: string;
    reply: (scope: nock.Interceptor) => nock.Scope;
    status: number;
    message: string;
    error: string;
  }[] = [
    {
      name: 'answers 503',
      reply: (i) => i.reply(503, 'upstream down'),
      status: 502,
      message: 'An upstream service failed',
      error: 'upstream_auth_failed',
    },
    {
      name: 'refuses the code with invalid_grant',
      reply: (i) => i.reply(400, { error: 'invalid_grant', error_description: 'grant request is invalid' }),
      status: 400,
      message: 'already used or has expired',
      error: 'invalid_input',
    },
    {
      name: 'answers a body that is not JSON',
      reply: (i) => i.reply(200, '<html>oops</html>', { 'content-type': 'text/html' }),
      status: 502,
      message: 'An upstream service failed',
      error: 'upstream_auth_failed',
    },
    {
      name: 'answers JSON without an access_token',
      reply: (i) => i.reply(200, { token_type: 'Bearer', expires_in: 600 }),
      status: 502,
      message: 'An upstream service failed',
      error: 'upstream_auth_failed',
    },
  ];

  it.each(failures)(
    'shows a clear error page, stores nothing and stays recoverable when the token endpoint $name',
    async ({ reply, status, message, error }) => {
      const flow = await elicit('Token endpoint fails');
      const { browser, callbackUrl } = await authorizeUntilCallback(flow);
      const token = reply(reportsTokenEndpoint(stack));
      const before = await navigation(flow);

      const page = await browser.get(callbackUrl);
      expect(token.isDone()).toBe(true);
      expect(page.status).toBe(status);
      expect(page.text).toContain(message);
      expectCleanErrorPage(page, callbackUrl);
      await expectRefusedAndRecoverable(flow, before, error);
    },
  );

  describe("against a provider on a nock'd host", () => {
    const issuer = 'https://reports.example.test';
    const metadata = (authorizationEndpoint: string) => ({
      issuer,
      authorization_endpoint: authorizationEndpoint,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    });
    const clientFor = (fetch = createFetch()) =>
      createProviderClient(
        parseProviders(
          [
            {
              id: 'elsewhere',
              displayName: 'Elsewhere',
              issuer,
              clientId: 'broker',
              clientSecret: 's3cret',
              scopes: ['openid'],
              apiBase: `${issuer}/api`,
              audience: `${issuer}/api`,
            },
          ],
          { allowLoopback: false, self: TEST_SELF },
        )[0]!,
        {
          fetch,
          allowLoopback: false,
          now: () => new Date(),
        },
      );

    // The control for the next test: nock honours the abort, so a slow reply is cut off at the fetch timeout.
    it('cuts off a request that carries no signal of its own at the fetch timeout', async () => {
      nock(issuer).post('/token').delay(3000).reply(200, {});
      const started = Date.now();
      await expect(createFetch({ timeoutMs: 300 })(`${issuer}/token`, { method: 'POST' })).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(1000);
    });

    // openid-client passes its own 30 s signal; the broker's fetch timeout must still apply (src/shared/httpClient.ts).
    it('gives up on a token endpoint that answers slower than the fetch timeout', async () => {
      const timeoutMs = 300;
      const upstreamDelayMs = 3_000;
      nock(issuer)
        .get('/.well-known/openid-configuration')
        .reply(200, metadata(`${issuer}/auth`));
      const token = nock(issuer).post('/token').delay(upstreamDelayMs).reply(200, { token_type: 'Bearer' });
      const client = clientFor(createFetch({ timeoutMs }));
      const begun = await client.beginAuthorization('https://broker.example.test/oauth/callback');
      const callback = new URL(
        `https://broker.example.test/oauth/callback?code=c0de&state=${begun.state}&iss=${encodeURIComponent(issuer)}`,
      );

      const started = Date.now();
      const outcome = await client
        .completeAuthorization(callback, 'https://broker.example.test/oauth/callback', begun)
        .then(
          () => 'resolved',
          (err: unknown) => (err as { code?: string }).code,
        );
      const elapsed = Date.now() - started;
      expect(token.isDone()).toBe(true);
      expect({ outcome, waitedForTheSlowUpstream: elapsed >= upstreamDelayMs }).toEqual({
        outcome: 'unavailable',
        waitedForTheSlowUpstream: false,
      });
    });

    it('refuses discovery metadata whose authorization endpoint is on another host, before sending anyone there', async () => {
      const discovery = nock(issuer)
        .get('/.well-known/openid-configuration')
        .reply(200, metadata('https://evil.example.test/auth'));
      const evil = nock('https://evil.example.test').get(/.*/).reply(200, 'you should not be here');

      await expect(clientFor().beginAuthorization('https://broker.example.test/oauth/callback')).rejects.toThrow(
        'elsewhere authorization_endpoint is not on the configured host reports.example.test: https://evil.example.test/auth',
      );
      expect(discovery.isDone()).toBe(true);
      expect(evil.isDone()).toBe(false);
    });
  });
});
