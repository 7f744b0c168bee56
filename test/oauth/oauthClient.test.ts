import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/appError.js';
import { createOidcClient } from '../../src/oauth/oauthClient.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { Secret } from '../../src/shared/secret.js';

const issuer = 'https://login.example.test';
const client = () =>
  createOidcClient({
    issuer,
    clientId: 'connect-broker',
    clientSecret: new Secret('s3cret'),
    fetch: createFetch(),
    allowLoopback: false,
  });

describe('oauthClient', () => {
  afterEach(() => {
    nock.cleanAll();
  });

  it('cannot reach the network: an unmocked discovery is refused by nock, not sent', async () => {
    const error = await client()
      .ready()
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('unavailable');
    const root = ((error as AppError).cause as Error).cause as Error;
    expect(root.message).toMatch(/^Nock: Disallowed net connect for "login\.example\.test:443/);
  });

  it('builds an authorization request with PKCE S256, state, nonce and the exact redirect URI', async () => {
    const scope = nock(issuer)
      .get('/.well-known/openid-configuration')
      .reply(200, {
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
      });
    const login = await client().beginLogin({
      redirectUri: 'https://broker.example.test/auth/callback',
      scope: 'openid profile',
    });
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
    const scope = nock(issuer)
      .get('/.well-known/openid-configuration')
      .reply(200, {
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
      });
    await expect(oidc.ready()).resolves.toBeUndefined();
    scope.done();
  });

  it('refuses metadata that names another issuer', async () => {
    nock(issuer)
      .get('/.well-known/openid-configuration')
      .reply(200, { issuer: 'https://evil.example.test', authorization_endpoint: `${issuer}/auth` });
    await expect(client().ready()).rejects.toMatchObject({ code: 'upstream_auth_failed', expose: false });
  });
});

describe('the URL policy on the sign-in path', () => {
  const redirectUri = 'https://broker.example.test/auth/callback';
  const good = {
    issuer,
    authorization_endpoint: `${issuer}/auth`,
    token_endpoint: `${issuer}/token`,
    userinfo_endpoint: `${issuer}/me`,
    jwks_uri: `${issuer}/jwks`,
    response_types_supported: ['code'],
  };
  afterEach(() => {
    nock.cleanAll();
  });

  it('refuses an issuer the policy refuses before anything is fetched', () => {
    const make =
      (value: string, allowLoopback = false) =>
      () =>
        createOidcClient({
          issuer: value,
          clientId: 'connect-broker',
          clientSecret: new Secret('s3cret'),
          fetch: createFetch(),
          allowLoopback,
        });
    expect(make('https://user:pw@login.example.test')).toThrow(/OIDC issuer carries user information/);
    expect(make('https://127.0.0.1:8444')).toThrow(/OIDC issuer points at a loopback host/);
    expect(make('https://203.0.113.7')).toThrow(/OIDC issuer has an IP-address host/);
    expect(make('https://127.0.0.1:8444', true)).not.toThrow();
  });

  for (const [endpoint, path] of [
    ['authorization_endpoint', '/auth'],
    ['token_endpoint', '/token'],
    ['userinfo_endpoint', '/me'],
    ['jwks_uri', '/jwks'],
  ] as const) {
    it(`refuses a discovered ${endpoint} on http://, and sends nothing to it`, async () => {
      const discovery = nock(issuer)
        .get('/.well-known/openid-configuration')
        .reply(200, { ...good, [endpoint]: `http://login.example.test${path}` });
      const plain = nock('http://login.example.test').get(path).reply(200, {}).post(path).reply(200, {});
      const error = await client()
        .beginLogin({ redirectUri, scope: 'openid profile' })
        .catch((err: unknown) => err);
      expect(error).toMatchObject({ code: 'unavailable', expose: false });
      expect((error as Error).message).toBe(
        `Sign-in is unavailable: the ${issuer} ${endpoint} must use https: http://login.example.test${path}`,
      );
      discovery.done();
      expect(plain.isDone()).toBe(false);
    });
  }

  it('refuses discovered endpoints on loopback or IP-address hosts outside development', async () => {
    for (const bad of [
      'https://127.0.0.1:9000/token',
      'https://10.0.0.8/token',
      'https://login.example.test:443@evil.example.test/token',
    ]) {
      nock(issuer)
        .get('/.well-known/openid-configuration')
        .reply(200, { ...good, token_endpoint: bad });
      await expect(client().beginLogin({ redirectUri, scope: 'openid profile' }), bad).rejects.toMatchObject({
        code: 'unavailable',
      });
    }
  });

  it('refuses a redirect URI on PUBLIC_URL that the policy refuses, before discovery', async () => {
    const discovery = nock(issuer).get('/.well-known/openid-configuration').reply(200, good);
    await expect(
      client().beginLogin({ redirectUri: 'http://broker.example.test/auth/callback', scope: 'openid profile' }),
    ).rejects.toMatchObject({
      code: 'unavailable',
      message:
        'Sign-in is unavailable: the sign-in redirect URI must use https: http://broker.example.test/auth/callback',
    });
    expect(discovery.isDone()).toBe(false);
  });

  it('does not follow a redirect from the discovery document', async () => {
    nock(issuer)
      .get('/.well-known/openid-configuration')
      .reply(301, '', { Location: 'https://elsewhere.example.test/.well-known/openid-configuration' });
    const elsewhere = nock('https://elsewhere.example.test')
      .get('/.well-known/openid-configuration')
      .reply(200, { ...good, issuer: 'https://elsewhere.example.test' });
    await expect(client().ready()).rejects.toMatchObject({ code: 'upstream_auth_failed' });
    expect(elsewhere.isDone()).toBe(false);
  });

  it('refuses a discovery document larger than 512 KiB', async () => {
    nock(issuer)
      .get('/.well-known/openid-configuration')
      .reply(200, JSON.stringify({ ...good, padding: 'x'.repeat(600 * 1024) }), { 'Content-Type': 'application/json' });
    const error = await client()
      .ready()
      .catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'upstream_auth_failed' });
    expect(((error as Error).cause as Error).cause).toMatchObject({
      name: 'FetchRefusedError',
      message: `${issuer}/.well-known/openid-configuration answered more than 524288 bytes`,
    });
  });

  it('signs in against metadata that passes the policy', async () => {
    const discovery = nock(issuer).get('/.well-known/openid-configuration').reply(200, good);
    const login = await client().beginLogin({ redirectUri, scope: 'openid profile' });
    expect(login.url.origin + login.url.pathname).toBe(`${issuer}/auth`);
    discovery.done();
  });
});
