import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/appError.js';
import { createOidcClient } from '../../src/oauth/oauthClient.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { Secret } from '../../src/shared/secret.js';

const issuer = 'https://login.example.test';
const client = () => createOidcClient({ issuer, clientId: 'connect-broker', clientSecret: new Secret('s3cret'), fetch: createFetch() });

describe('oauthClient', () => {
  afterEach(() => {
    nock.cleanAll();
  });

  it('cannot reach the network: an unmocked discovery is refused by nock, not sent', async () => {
    const error = await client().ready().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('unavailable');
    const root = ((error as AppError).cause as Error).cause as Error;
    expect(root.message).toMatch(/^Nock: Disallowed net connect for "login\.example\.test:443/);
  });

  it('builds an authorization request with PKCE S256, state, nonce and the exact redirect URI', async () => {
    const scope = nock(issuer).get('/.well-known/openid-configuration').reply(200, {
      issuer,
      authorization_endpoint: `${issuer}/auth`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      response_types_supported: ['code'],
    });
    const login = await client().beginLogin({ redirectUri: 'https://broker.example.test/auth/callback', scope: 'openid profile' });
    const params = login.url.searchParams;
    expect(login.url.origin + login.url.pathname).toBe(`${issuer}/auth`);
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).not.toBe(login.codeVerifier);
    expect(params.get('state')).toBe(login.state);
    expect(params.get('nonce')).toBe(login.nonce);
    expect(params.get('redirect_uri')).toBe('https://broker.example.test/auth/callback');
    expect(params.get('client_id')).toBe('connect-broker');
    expect(login.url.href).not.toContain('s3cret');
    scope.done();
  });

  it('retries discovery after a failure instead of caching it', async () => {
    nock(issuer).get('/.well-known/openid-configuration').reply(500, 'down');
    const oidc = client();
    await expect(oidc.ready()).rejects.toMatchObject({ code: 'upstream_auth_failed' });
    const scope = nock(issuer).get('/.well-known/openid-configuration').reply(200, {
      issuer,
      authorization_endpoint: `${issuer}/auth`,
      token_endpoint: `${issuer}/token`,
    });
    await expect(oidc.ready()).resolves.toBeUndefined();
    scope.done();
  });

  it('refuses metadata that names another issuer', async () => {
    nock(issuer).get('/.well-known/openid-configuration').reply(200, { issuer: 'https://evil.example.test', authorization_endpoint: `${issuer}/auth` });
    await expect(client().ready()).rejects.toMatchObject({ code: 'upstream_auth_failed', expose: false });
  });
});
