import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { createProviderClient } from '../../src/oauth/providerClient.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { plainProviderEntry, startPlainOAuthServer, type PlainOAuthServer } from '../support/plainOAuthServer.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { TEST_SELF } from '../support/brokerSelf.js';

// A plain OAuth 2.0 provider whose endpoints come from its RFC 8414
// metadata (/.well-known/oauth-authorization-server), a real oidc-provider
// asked for no `openid` scope: no nonce, no ID Token, an opaque token, and
// `iss` required because the metadata advertises it (RFC 9207).

const REDIRECT_URI = 'https://broker.example.test/oauth/callback/plain';

describe('an oauth2 entry with RFC 8414 metadata discovery', () => {
  let dir: string;
  let fetch: Fetch;
  let plain: PlainOAuthServer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rfc8414-'));
    const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
    fetch = createFetch({ extraCaPems: [tls.caPem] });
    plain = await startPlainOAuthServer({ tls, redirectUri: REDIRECT_URI });
  });
  afterAll(async () => {
    await plain?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const client = () => {
    const [provider] = parseProviders([plainProviderEntry(plain, { metadataDiscovery: true })], {
      allowLoopback: true,
      self: TEST_SELF,
    });
    return createProviderClient(provider!, { fetch, allowLoopback: true, now: () => new Date() });
  };

  /** alice signs in and allows at the server; returns the authorization response the browser was sent to. */
  async function authorize(url: URL): Promise<URL> {
    const browser = createTestBrowser({ fetch, stopAt: (u) => u.href.startsWith(REDIRECT_URI) });
    const login = await browser.get(url.href);
    const consent = await browser.submitForm(login, { login: 'alice', password: DEV_PASSWORD });
    const stopped = await browser.submitForm(consent, {}, { form: '/confirm' });
    return new URL(stopped.location!);
  }

  it('takes the endpoints from the metadata and connects: no nonce, PKCE, HTTP Basic, an opaque token', async () => {
    const c = client();
    const begun = await c.beginAuthorization(REDIRECT_URI);
    expect(`${begun.url.origin}${begun.url.pathname}`).toBe(`${plain.issuer}/auth`);
    expect(begun.url.searchParams.has('nonce')).toBe(false);
    expect(begun.url.searchParams.get('code_challenge_method')).toBe('S256');

    const response = await authorize(begun.url);
    expect(response.searchParams.get('iss')).toBe(plain.issuer);
    const { tokens, connection } = await c.completeAuthorization(response, REDIRECT_URI, begun);
    expect(tokens.accessToken).toMatch(/^[\w-]{20,}$/);
    // No ID Token: the account comes from the entry's identity call.
    expect(connection).toMatchObject({
      upstreamSubject: 'plain-alice',
      upstreamName: 'alice',
      grantedScopes: ['profile'],
    });
    expect(plain.tokenRequests.at(-1)).toEqual({ basic: true });
  });

  it('requires the `iss` the metadata advertises, and redeems no code without it', async () => {
    const c = client();
    const begun = await c.beginAuthorization(REDIRECT_URI);
    const response = await authorize(begun.url);
    response.searchParams.delete('iss');
    const before = plain.tokenRequests.length;
    await expect(c.completeAuthorization(response, REDIRECT_URI, begun)).rejects.toMatchObject({
      code: 'upstream_auth_failed',
    });
    expect(plain.tokenRequests.length).toBe(before);
  });
});
