import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { createProviderClient } from '../../src/oauth/providerClient.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { TEST_SELF } from '../support/brokerSelf.js';

// Plain OAuth 2.0 catalog providers against their real host names, answered
// by nock at the HTTP level through the broker's own fetch: explicit
// endpoints (no discovery request is made), the entry's client
// authentication and PKCE setting, and its conformer reading the token
// endpoint's answer before openid-client does.

const REDIRECT_URI = 'https://broker.example.test/oauth/callback/x';

function clientFor(entry: Record<string, unknown>) {
  const [provider] = parseProviders([entry], { allowLoopback: false, self: TEST_SELF });
  return createProviderClient(provider!, {
    fetch: createFetch(),
    allowLoopback: false,
    now: () => new Date('2026-01-01T00:00:00Z'),
  });
}

interface TokenRequest {
  authorization: string | undefined;
  body: URLSearchParams;
}

/** Answers one token request with `reply`, keeping what the broker sent. */
function tokenEndpoint(
  origin: string,
  path: string,
  reply: { status: number; body: string | object; type?: string },
): TokenRequest[] {
  const seen: TokenRequest[] = [];
  nock(origin)
    .post(path)
    .reply(function (_uri, body) {
      seen.push({
        authorization: this.req.headers['authorization'] as string | undefined,
        body: new URLSearchParams(body as string),
      });
      return [reply.status, reply.body, { 'content-type': reply.type ?? 'application/json' }];
    });
  return seen;
}

afterEach(() => {
  nock.cleanAll();
});

describe('GitHub (catalog: client_secret_post, PKCE, form-encoded answers, errors inside HTTP 200)', () => {
  const github = () =>
    clientFor({
      id: 'github',
      catalog: 'github',
      clientId: 'Iv1.client',
      clientSecret: 'github-secret',
      scopes: ['repo', 'read:user'],
    });

  it('authorizes with PKCE and no nonce, sends the secret in the body, and reads a form-encoded token without a refresh token', async () => {
    const client = github();
    const begun = await client.beginAuthorization(REDIRECT_URI);
    const sent = Object.fromEntries(begun.url.searchParams);
    expect(`${begun.url.origin}${begun.url.pathname}`).toBe('https://github.com/login/oauth/authorize');
    expect(sent).toMatchObject({
      client_id: 'Iv1.client',
      scope: 'repo read:user',
      code_challenge_method: 'S256',
      redirect_uri: REDIRECT_URI,
    });
    expect(sent).not.toHaveProperty('nonce');
    expect(sent).not.toHaveProperty('resource');
    expect(begun.nonce).toBe('');

    const seen = tokenEndpoint('https://github.com', '/login/oauth/access_token', {
      status: 200,
      body: 'access_token=gho_opaque&scope=repo%2Cread%3Auser&token_type=bearer',
      type: 'application/x-www-form-urlencoded',
    });
    // The identity call: GET /user with the new token, GitHub's API headers and a User-Agent (GitHub refuses requests without one).
    const identity: Record<string, unknown>[] = [];
    nock('https://api.github.com')
      .get('/user')
      .reply(function () {
        identity.push({ ...this.req.headers });
        return [200, { login: 'octocat', id: 583231, type: 'User' }];
      });
    const { tokens, connection } = await client.completeAuthorization(
      new URL(`${REDIRECT_URI}?code=c0de&state=${begun.state}`),
      REDIRECT_URI,
      begun,
    );

    expect(tokens).toEqual({ accessToken: 'gho_opaque', refreshToken: undefined, expiresAt: undefined });
    expect(connection).toEqual({
      upstreamSubject: '583231',
      upstreamName: 'octocat',
      grantedScopes: ['repo', 'read:user'],
      metadata: {},
      apiBase: undefined,
    });
    expect(identity).toEqual([
      expect.objectContaining({
        authorization: 'Bearer gho_opaque',
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
        'user-agent': 'connect-broker',
      }),
    ]);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.authorization).toBeUndefined();
    expect(Object.fromEntries(seen[0]!.body)).toMatchObject({
      client_id: 'Iv1.client',
      client_secret: 'github-secret',
      code: 'c0de',
      code_verifier: begun.codeVerifier,
      redirect_uri: REDIRECT_URI,
    });
  });

  it('refuses a code GitHub rejects inside HTTP 200 as a spent sign-in response, not as an unreadable answer', async () => {
    const client = github();
    const begun = await client.beginAuthorization(REDIRECT_URI);
    tokenEndpoint('https://github.com', '/login/oauth/access_token', {
      status: 200,
      body: { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' },
    });

    const refused = await client
      .completeAuthorization(new URL(`${REDIRECT_URI}?code=old&state=${begun.state}`), REDIRECT_URI, begun)
      .catch((err: unknown) => err);
    expect(refused).toMatchObject({
      code: 'invalid_input',
      message: 'This sign-in response was already used or has expired. Start again.',
    });
  });

  it('refuses a response whose state is not the one sent, before any token request', async () => {
    const client = github();
    const begun = await client.beginAuthorization(REDIRECT_URI);
    const seen = tokenEndpoint('https://github.com', '/login/oauth/access_token', {
      status: 200,
      body: { access_token: 'gho_x', token_type: 'bearer' },
    });
    await expect(
      client.completeAuthorization(new URL(`${REDIRECT_URI}?code=c0de&state=forged`), REDIRECT_URI, begun),
    ).rejects.toMatchObject({ code: 'upstream_auth_failed' });
    expect(seen).toEqual([]);
  });
});

describe('Notion (catalog: client_secret_basic, no PKCE, a null refresh token)', () => {
  it('sends no code challenge or verifier, authenticates with HTTP Basic, and takes an answer whose refresh_token is null', async () => {
    const client = clientFor({
      id: 'notion',
      catalog: 'notion',
      clientId: 'notion-client',
      clientSecret: 'notion-secret',
    });
    const begun = await client.beginAuthorization(REDIRECT_URI);
    const sent = Object.fromEntries(begun.url.searchParams);
    expect(`${begun.url.origin}${begun.url.pathname}`).toBe('https://api.notion.com/v1/oauth/authorize');
    expect(sent).toMatchObject({ owner: 'user', client_id: 'notion-client' });
    expect(sent).not.toHaveProperty('code_challenge');
    expect(sent).not.toHaveProperty('scope');
    expect(begun.codeVerifier).toBe('');

    const seen = tokenEndpoint('https://api.notion.com', '/v1/oauth/token', {
      status: 200,
      body: {
        access_token: 'ntn_opaque',
        token_type: 'bearer',
        refresh_token: null,
        bot_id: 'b1',
        workspace_id: 'w1',
        owner: { type: 'user', user: { id: 'u1' } },
      },
    });
    const { tokens, connection } = await client.completeAuthorization(
      new URL(`${REDIRECT_URI}?code=c0de&state=${begun.state}`),
      REDIRECT_URI,
      begun,
    );

    expect(tokens).toMatchObject({ accessToken: 'ntn_opaque', refreshToken: undefined });
    // The account is the token answer's owner; the workspace is kept as connection metadata.
    expect(connection).toMatchObject({ upstreamSubject: 'u1', metadata: { workspace_id: 'w1', bot_id: 'b1' } });
    // RFC 6749 §2.3.1: id and secret are form-encoded before Base64.
    const [id, secret] = Buffer.from(seen[0]!.authorization!.replace(/^Basic /, ''), 'base64')
      .toString('utf8')
      .split(':')
      .map(decodeURIComponent);
    expect({ id, secret }).toEqual({ id: 'notion-client', secret: 'notion-secret' });
    expect(seen[0]!.body.has('client_secret')).toBe(false);
    expect(seen[0]!.body.has('code_verifier')).toBe(false);
  });
});

describe("an oauth2 entry with RFC 8414 metadata discovery, on a nock'd host", () => {
  const issuer = 'https://auth.acme.example';
  const entry = {
    id: 'acme',
    kind: 'oauth2',
    displayName: 'Acme',
    docs: 'https://acme.example/docs/oauth',
    issuer,
    metadataDiscovery: true,
    authorizationEndpoint: `${issuer}/authorize`,
    tokenEndpoint: 'https://token.acme.example/token',
    identity: { from: 'call', method: 'GET', url: 'https://api.acme.example/me', subjectPath: 'id' },
    clientAuth: 'client_secret_basic',
    pkce: true,
    apiBase: 'https://api.acme.example',
    clientId: 'acme-client',
    clientSecret: 'acme-secret',
  };
  const metadata = (tokenEndpoint: string) => ({
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: tokenEndpoint,
    response_types_supported: ['code'],
  });

  it('lets each endpoint sit on its own written host (authorize and token hosts differ)', async () => {
    const discovery = nock(issuer)
      .get('/.well-known/oauth-authorization-server')
      .reply(200, metadata('https://token.acme.example/oauth/token'));
    const begun = await clientFor(entry).beginAuthorization(REDIRECT_URI);
    expect(discovery.isDone()).toBe(true);
    expect(`${begun.url.origin}${begun.url.pathname}`).toBe(`${issuer}/oauth/authorize`);
  });

  it('refuses metadata whose token endpoint is off the written token host, before sending anyone anywhere', async () => {
    nock(issuer).get('/.well-known/oauth-authorization-server').reply(200, metadata('https://evil.example/token'));
    await expect(clientFor(entry).beginAuthorization(REDIRECT_URI)).rejects.toThrow(
      'acme token_endpoint is not on the configured host token.acme.example: https://evil.example/token',
    );
  });
});
