import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The broker's own sign-in against an issuer played by nock, whose discovery
// document names the endpoints each test wants.
const ISSUER = 'https://login.example.test';

describe("the URL policy on the broker's own sign-in", () => {
  const { stack } = useBrokerStack({ signInIssuer: ISSUER });

  afterEach(() => {
    nock.cleanAll();
  });

  const metadata = (endpoints: Record<string, string>) => ({
    issuer: ISSUER,
    authorization_endpoint: `${ISSUER}/auth`,
    token_endpoint: `${ISSUER}/token`,
    userinfo_endpoint: `${ISSUER}/me`,
    jwks_uri: `${ISSUER}/jwks`,
    response_types_supported: ['code'],
    ...endpoints,
  });

  const login = () =>
    stack.fetch(`${stack.brokerUrl}/login?return_to=/`, {
      redirect: 'manual',
      headers: { accept: 'application/json' },
    });

  it('refuses to start a sign-in whose discovered token endpoint is on http://, and sends nothing to it', async () => {
    const discovery = nock(ISSUER)
      .get('/.well-known/openid-configuration')
      .reply(200, metadata({ token_endpoint: 'http://login.example.test/token' }));
    const plain = nock('http://login.example.test').post('/token').reply(200, {});
    const response = await login();
    expect(response.status).toBe(503);
    expect(response.headers.get('location')).toBeNull();
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(await response.json()).toMatchObject({
      error: 'unavailable',
      message: 'The service is not ready. Try again shortly.',
    });
    discovery.done();
    expect(plain.isDone()).toBe(false);
    expect(stack.logs.join('')).toContain(
      `Sign-in is unavailable: the ${ISSUER} token_endpoint must use https: http://login.example.test/token`,
    );
  });

  it('never sends the browser to a discovered authorization endpoint on http://', async () => {
    nock(ISSUER)
      .get('/.well-known/openid-configuration')
      .reply(200, metadata({ authorization_endpoint: 'http://login.example.test/auth' }));
    const response = await login();
    expect(response.status).toBe(503);
    expect(response.headers.get('location')).toBeNull();
    expect(stack.logs.join('')).toContain(`the ${ISSUER} authorization_endpoint must use https`);
  });

  it('refuses a discovered UserInfo endpoint on an IP-address host', async () => {
    nock(ISSUER)
      .get('/.well-known/openid-configuration')
      .reply(200, metadata({ userinfo_endpoint: 'https://10.0.0.8/me' }));
    const response = await login();
    expect(response.status).toBe(503);
    expect(stack.logs.join('')).toContain(
      `the ${ISSUER} userinfo_endpoint has an IP-address host: https://10.0.0.8/me`,
    );
  });

  it('starts the sign-in once the metadata passes the policy', async () => {
    nock(ISSUER).get('/.well-known/openid-configuration').reply(200, metadata({}));
    const response = await login();
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location') ?? '');
    expect(location.origin + location.pathname).toBe(`${ISSUER}/auth`);
    expect(location.searchParams.get('redirect_uri')).toBe(`${stack.brokerUrl}/auth/callback`);
  });
});
