import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { createProviderClient } from '../../src/oauth/providerClient.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { TEST_SELF } from '../support/brokerSelf.js';

// A connection's grant revoked at its provider, per catalog entry, on the providers' real host
// names answered by nock through the broker's own fetch: RFC 7009 where the entry names an
// endpoint (the refresh token when held, else the access token, the client authenticated as at
// the token endpoint), GitHub's own DELETE call, nothing at all where the provider has neither;
// and what a failure is recorded as: a few fixed words, never the provider's text or a token.

const ACCESS = 'access-canary-7d1f';
const REFRESH = 'refresh-canary-93ab';

function clientFor(entry: Record<string, unknown>) {
  const [provider] = parseProviders([entry], { allowLoopback: false, self: TEST_SELF });
  return createProviderClient(provider!, { fetch: createFetch(), allowLoopback: false, now: () => new Date() });
}

interface Seen {
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

function answer(scope: nock.Interceptor, status: number, body: string | object = ''): Seen[] {
  const seen: Seen[] = [];
  scope.reply(function (_uri, requestBody) {
    seen.push({
      authorization: this.req.headers['authorization'] as string | undefined,
      contentType: this.req.headers['content-type'] as string | undefined,
      body: typeof requestBody === 'string' ? requestBody : JSON.stringify(requestBody),
    });
    return [status, body, typeof body === 'string' ? {} : { 'content-type': 'application/json' }];
  });
  return seen;
}

afterEach(() => {
  nock.cleanAll();
});

const salesforce = () =>
  clientFor({ id: 'sf', catalog: 'salesforce', clientId: 'sf-client', clientSecret: 'sf-secret-canary' });

describe('RFC 7009 (Salesforce: an explicit revocation endpoint, client_secret_post)', () => {
  it('revokes the refresh token when one is held, in one request, with the client credentials', async () => {
    const seen = answer(nock('https://login.salesforce.com').post('/services/oauth2/revoke'), 200);
    expect(await salesforce().revoke({ accessToken: ACCESS, refreshToken: REFRESH })).toEqual({
      outcome: 'revoked',
      token: 'refresh_token',
    });
    expect(seen).toHaveLength(1);
    const form = new URLSearchParams(seen[0]!.body);
    expect(Object.fromEntries(form)).toEqual({
      token: REFRESH,
      token_type_hint: 'refresh_token',
      client_id: 'sf-client',
      client_secret: 'sf-secret-canary',
    });
  });

  it('revokes the access token when no refresh token is held', async () => {
    const seen = answer(nock('https://login.salesforce.com').post('/services/oauth2/revoke'), 200);
    expect(await salesforce().revoke({ accessToken: ACCESS, refreshToken: undefined })).toEqual({
      outcome: 'revoked',
      token: 'access_token',
    });
    expect(new URLSearchParams(seen[0]!.body).get('token_type_hint')).toBe('access_token');
  });

  it("records a refusal by its error code and status, never the provider's description", async () => {
    answer(nock('https://login.salesforce.com').post('/services/oauth2/revoke'), 400, {
      error: 'unsupported_token_type',
      error_description: `cannot revoke ${REFRESH}`,
    });
    const result = await salesforce().revoke({ accessToken: ACCESS, refreshToken: REFRESH });
    expect(result).toEqual({ outcome: 'failed', reason: 'refused (unsupported_token_type, HTTP 400)' });
  });

  it('records a server error by its status, and an unreachable provider as such', async () => {
    answer(nock('https://login.salesforce.com').post('/services/oauth2/revoke'), 503, `busy with ${REFRESH}`);
    expect(await salesforce().revoke({ accessToken: ACCESS, refreshToken: REFRESH })).toEqual({
      outcome: 'failed',
      reason: 'answered HTTP 503',
    });
    nock('https://login.salesforce.com').post('/services/oauth2/revoke').replyWithError({ code: 'ECONNREFUSED' });
    expect(await salesforce().revoke({ accessToken: ACCESS, refreshToken: REFRESH })).toEqual({
      outcome: 'failed',
      reason: 'could not be reached',
    });
  });

  it('sends nothing when no token is held', async () => {
    expect(await salesforce().revoke({ accessToken: undefined, refreshToken: undefined })).toEqual({
      outcome: 'failed',
      reason: 'no token is held to revoke',
    });
  });
});

describe("GitHub's own call (DELETE /applications/{client_id}/token)", () => {
  const github = (params = {}) =>
    clientFor({ id: 'github', catalog: 'github', clientId: 'Iv1.client', clientSecret: 'gh-secret-canary', params });

  it('deletes the access token with HTTP Basic and a JSON body, answered 204', async () => {
    const seen = answer(nock('https://api.github.com').delete('/applications/Iv1.client/token'), 204);
    expect(await github().revoke({ accessToken: ACCESS, refreshToken: undefined })).toEqual({
      outcome: 'revoked',
      token: 'access_token',
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.authorization).toBe(`Basic ${Buffer.from('Iv1.client:gh-secret-canary').toString('base64')}`);
    expect(seen[0]!.contentType).toBe('application/json');
    expect(JSON.parse(seen[0]!.body)).toEqual({ access_token: ACCESS });
  });

  it('calls a GitHub Enterprise Server under its /api/v3, and records a refusal by its status only', async () => {
    answer(nock('https://github.example.com').delete('/api/v3/applications/Iv1.client/token'), 422, {
      message: `Validation Failed for ${ACCESS}`,
    });
    expect(
      await github({ host: 'github.example.com' }).revoke({ accessToken: ACCESS, refreshToken: undefined }),
    ).toEqual({ outcome: 'failed', reason: 'refused (HTTP 422)' });
  });
});

describe('a provider with no revocation', () => {
  it('is not_supported, and nothing is sent (Notion)', async () => {
    const notion = clientFor({ id: 'notion', catalog: 'notion', clientId: 'n', clientSecret: 's' });
    // nock refuses every unmocked request: a request here would fail the revocation, not pass it.
    expect(await notion.revoke({ accessToken: ACCESS, refreshToken: REFRESH })).toEqual({ outcome: 'not_supported' });
    expect(nock.pendingMocks()).toEqual([]);
  });
});
