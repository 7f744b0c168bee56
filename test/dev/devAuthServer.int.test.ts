import { createLocalJWKSet, decodeJwt, type JWK, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { openReportStore } from '../../src/dev/reportStore.js';
import {
  atTestCallback,
  authorizeCode,
  codeRequestUrl,
  createPkce,
  exchangeCode,
  tokenRequest,
} from '../support/devOAuth.js';
import { type DevServersFixture, startDevServers } from '../support/devServers.js';
import { createTestBrowser, type TestBrowser } from '../support/testBrowser.js';

let dev: DevServersFixture;

beforeAll(async () => {
  dev = await startDevServers(await openReportStore());
});

afterAll(async () => {
  await dev?.close();
});

function newBrowser(): TestBrowser {
  return createTestBrowser({ fetch: dev.fetch });
}

const idpAuthorizationUrl = (overrides: Record<string, string | undefined> = {}) => codeRequestUrl(dev.idp, overrides);

describe('development identity provider', () => {
  it('completes a code flow with PKCE: an id_token for alice and a JWT access token for the resource', async () => {
    const browser = newBrowser();
    const authorized = await authorizeCode(browser, {
      issuer: dev.idp.issuer,
      client: dev.idp.client,
      scope: 'openid profile mcp:tools',
      resource: dev.idp.mcpResource,
      login: 'alice',
    });
    expect(authorized.callback.searchParams.get('iss')).toBe(dev.idp.issuer);

    const token = await exchangeCode(dev.fetch, dev.idp.issuer, dev.idp.client, authorized);
    expect(token.status).toBe(200);
    const jwksResponse = await dev.fetch(`${dev.idp.issuer}/jwks`);
    const jwks = createLocalJWKSet((await jwksResponse.json()) as { keys: JWK[] });

    const idToken = await jwtVerify(String(token.body['id_token']), jwks, {
      issuer: dev.idp.issuer,
      audience: dev.idp.client.clientId,
      algorithms: ['ES256'],
    });
    expect(idToken.payload.sub).toBe('alice');

    const accessToken = await jwtVerify(String(token.body['access_token']), jwks, {
      issuer: dev.idp.issuer,
      audience: dev.idp.mcpResource,
      algorithms: ['ES256'],
      typ: 'at+jwt',
    });
    expect(accessToken.payload).toMatchObject({ sub: 'alice', scope: 'mcp:tools' });
  });

  it('refuses an authorization request without code_challenge', async () => {
    const url = idpAuthorizationUrl({ code_challenge: undefined, code_challenge_method: undefined });
    const page = await newBrowser().get(url, { stopAt: atTestCallback });
    const callback = new URL(page.location ?? '');
    expect(callback.searchParams.get('error')).toBe('invalid_request');
    expect(callback.searchParams.get('error_description')).toMatch(/PKCE/);
    expect(callback.searchParams.get('code')).toBeNull();
  });

  it('refuses a token request with a wrong code_verifier with invalid_grant', async () => {
    const authorized = await authorizeCode(newBrowser(), {
      issuer: dev.idp.issuer,
      client: dev.idp.client,
      scope: 'openid',
      login: 'bob',
    });
    const token = await exchangeCode(dev.fetch, dev.idp.issuer, dev.idp.client, {
      ...authorized,
      pkce: createPkce(),
    });
    expect(token.status).toBe(400);
    expect(token.body['error']).toBe('invalid_grant');
  });

  it('answers response_mode=form_post with a CSP that allows only its own inline script', async () => {
    const browser = newBrowser();
    const page = await browser.get(idpAuthorizationUrl({ response_mode: 'form_post' }));
    const post = await browser.submitForm(page, { login: 'alice', password: DEV_PASSWORD });
    expect(post.status).toBe(200);
    const [form] = browser.forms(post);
    expect(form?.action).toBe(dev.idp.client.redirectUri);
    expect(form?.fields.map((f) => f.name)).toEqual(expect.arrayContaining(['code', 'state', 'iss']));
    const csp = post.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    expect(csp).toContain(`form-action 'self' https://127.0.0.1:9`);
  });

  it('signs the user out through end_session and returns to the post-logout redirect URI', async () => {
    const browser = newBrowser();
    await authorizeCode(browser, { issuer: dev.idp.issuer, client: dev.idp.client, scope: 'openid', login: 'alice' });
    const signedOut = `https://127.0.0.1:9/idp/signed-out`;
    const query = new URLSearchParams({ client_id: dev.idp.client.clientId, post_logout_redirect_uri: signedOut });
    const confirm = await browser.get(`${dev.idp.issuer}/session/end?${query.toString()}`);
    expect(confirm.status).toBe(200);
    expect(confirm.headers.get('content-security-policy')).toContain(`form-action 'self' https://127.0.0.1:9`);
    const done = await browser.submitForm(confirm, {}, { button: 'Yes, sign me out', stopAt: atTestCallback });
    expect(done.location).toBe(signedOut);
    expect(browser.cookiesFor(`${dev.idp.issuer}/auth`).map((c) => c.name)).not.toContain('idp_session');
  });
});

describe('Report Service authorization server', () => {
  it('issues a refresh token to its client, and the refresh grant returns a new access token', async () => {
    const authorized = await authorizeCode(newBrowser(), {
      issuer: dev.reports.issuer,
      client: dev.reports.client,
      scope: 'reports:read',
      resource: dev.reports.apiResource,
      login: 'bob',
      allowConsent: true,
    });
    const first = await exchangeCode(dev.fetch, dev.reports.issuer, dev.reports.client, authorized);
    expect(first.status).toBe(200);
    expect(first.body['refresh_token']).toEqual(expect.any(String));

    const refreshed = await tokenRequest(dev.fetch, dev.reports.issuer, dev.reports.client, {
      grant_type: 'refresh_token',
      refresh_token: String(first.body['refresh_token']),
    });
    expect(refreshed.status).toBe(200);
    const claims = decodeJwt(String(refreshed.body['access_token']));
    expect(claims).toMatchObject({ sub: 'rs-user-bob', aud: dev.reports.apiResource, scope: 'reports:read' });
  });

  it('keeps its cookies apart from the IdP’s in one browser, as browsers share cookies across ports', async () => {
    const browser = newBrowser();
    await authorizeCode(browser, { issuer: dev.idp.issuer, client: dev.idp.client, scope: 'openid', login: 'alice' });
    await authorizeCode(browser, {
      issuer: dev.reports.issuer,
      client: dev.reports.client,
      scope: 'reports:read',
      login: 'alice',
      allowConsent: true,
    });
    const names = browser.cookiesFor(`${dev.idp.issuer}/`).map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['idp_session', 'reports_session']));
    const session = browser.cookies().find((c) => c.name === 'reports_session');
    expect(session).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Lax', path: '/' });
  });
});
