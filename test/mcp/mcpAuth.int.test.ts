import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import nock from 'nock';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBearerVerifier } from '../../src/mcp/mcpAuth.js';
import { systemClock } from '../../src/shared/clock.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { mcpPost, meta } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An MCP token issuer outside the development stack, played by nock, so each
// test decides what its discovery document and key set say, and can prove
// that a refused URL was never requested.
const ISSUER = 'https://idp.example.test';
const DISCOVERY = '/.well-known/openid-configuration';

let privateKey: CryptoKey;
let jwk: JWK;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256');
  privateKey = pair.privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
});
afterEach(() => {
  nock.cleanAll();
});

function metadata(jwksUri: string): Record<string, unknown> {
  return {
    issuer: ISSUER,
    authorization_endpoint: `${ISSUER}/auth`,
    token_endpoint: `${ISSUER}/token`,
    jwks_uri: jwksUri,
    response_types_supported: ['code'],
  };
}

interface MintOptions {
  audience: string;
  /** The JOSE header's typ; null leaves it out. Default at+jwt. */
  typ?: string | null;
  claims?: Record<string, unknown>;
}

function mint({ audience, typ = 'at+jwt', claims = { client_id: 'host-app' } }: MintOptions): Promise<string> {
  return new SignJWT({ scope: 'mcp', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1', ...(typ === null ? {} : { typ }) })
    .setIssuer(ISSUER)
    .setSubject('alice')
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey);
}

describe("the MCP bearer's key set comes only from a checked URL", () => {
  const { stack } = useBrokerStack({ mcpIssuer: ISSUER });
  const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta() } };

  /** POST /mcp with a token that is valid in every respect but where its keys come from. */
  async function callWithValidToken() {
    const token = await mint({ audience: stack.mcpResourceUrl });
    const response = await mcpPost(stack, listTools, { token });
    expect(response.text).not.toContain(token);
    return response;
  }

  function expectUnavailable(response: { status: number; headers: Headers; json: Record<string, unknown> }) {
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('30');
    expect(response.json['error']).toMatchObject({
      code: -32603,
      message: expect.stringContaining('cannot be reached to verify the access token'),
    });
  }

  // The tests in this block run in order: the verifier keeps a discovery that succeeded.
  it('refuses every token when discovery names an http:// jwks_uri, and fetches nothing from it', async () => {
    const discovery = nock(ISSUER).get(DISCOVERY).reply(200, metadata('http://idp.example.test/jwks'));
    const keys = nock('http://idp.example.test')
      .get('/jwks')
      .reply(200, { keys: [jwk] });
    expectUnavailable(await callWithValidToken());
    discovery.done();
    expect(keys.isDone(), 'the http:// key set was requested').toBe(false);
    expect(stack.logs.join('')).toContain('must use https: http://idp.example.test/jwks');
  });

  it('refuses every token when the jwks_uri is on another host than the issuer, and fetches nothing from it', async () => {
    const discovery = nock(ISSUER).get(DISCOVERY).reply(200, metadata('https://keys.example.test/jwks'));
    const keys = nock('https://keys.example.test')
      .get('/jwks')
      .reply(200, { keys: [jwk] });
    expectUnavailable(await callWithValidToken());
    discovery.done();
    expect(keys.isDone(), 'the other host was asked for keys').toBe(false);
    expect(stack.logs.join('')).toContain('is not on the configured host idp.example.test');
  });

  it('does not follow a redirect from the discovery document', async () => {
    const discovery = nock(ISSUER)
      .get(DISCOVERY)
      .reply(302, '', { Location: `${ISSUER}/moved${DISCOVERY}` });
    const moved = nock(ISSUER)
      .get(`/moved${DISCOVERY}`)
      .reply(200, metadata(`${ISSUER}/jwks`));
    expectUnavailable(await callWithValidToken());
    discovery.done();
    expect(moved.isDone(), 'the redirect was followed').toBe(false);
  });

  it('does not follow a redirect from the key set', async () => {
    const discovery = nock(ISSUER)
      .get(DISCOVERY)
      .reply(200, metadata(`${ISSUER}/jwks`));
    const keys = nock(ISSUER)
      .get('/jwks')
      .reply(302, '', { Location: `${ISSUER}/elsewhere` });
    const elsewhere = nock(ISSUER)
      .get('/elsewhere')
      .reply(200, { keys: [jwk] });
    expectUnavailable(await callWithValidToken());
    discovery.done();
    keys.done();
    expect(elsewhere.isDone(), 'the redirect was followed').toBe(false);
    expect(stack.logs.join('')).toContain('answered a redirect (302)');
  });

  it('refuses a key set larger than 512 KiB', async () => {
    // A valid key set but for its size (jose ignores unknown members).
    const keys = nock(ISSUER)
      .get('/jwks')
      .reply(200, JSON.stringify({ keys: [jwk], padding: 'x'.repeat(600 * 1024) }), {
        'Content-Type': 'application/json',
      });
    expectUnavailable(await callWithValidToken());
    keys.done();
    expect(stack.logs.join('')).toContain('answered more than 524288 bytes');
  });

  it('accepts the same token once the issuer serves a proper key set', async () => {
    const keys = nock(ISSUER)
      .get('/jwks')
      .reply(200, { keys: [jwk] });
    const response = await callWithValidToken();
    expect(response.status).toBe(200);
    keys.done();
  });

  describe('the RFC 9068 typ header', () => {
    it('accepts an access token with typ at+jwt (what oidc-provider sets) or application/at+jwt', async () => {
      for (const typ of ['at+jwt', 'application/at+jwt', 'AT+JWT']) {
        const response = await mcpPost(stack, listTools, {
          token: await mint({ audience: stack.mcpResourceUrl, typ }),
        });
        expect(response.status, typ).toBe(200);
      }
    });

    it('accepts an access token without typ, as issuers before RFC 9068 send them', async () => {
      const response = await mcpPost(stack, listTools, {
        token: await mint({ audience: stack.mcpResourceUrl, typ: null }),
      });
      expect(response.status).toBe(200);
    });

    it('refuses a token whose typ says it is not an access token (JWT, as on an ID Token)', async () => {
      for (const typ of ['JWT', 'application/jwt', 'dpop+jwt']) {
        const response = await mcpPost(stack, listTools, {
          token: await mint({ audience: stack.mcpResourceUrl, typ }),
        });
        expect(response.status, typ).toBe(401);
        expect(response.json['error']).toBe('invalid_token');
      }
    });
  });
});

describe("the verified token's client id", () => {
  const audience = 'https://broker.example.test/mcp';
  const verify = () => {
    nock(ISSUER)
      .get(DISCOVERY)
      .reply(200, metadata(`${ISSUER}/jwks`))
      .get('/jwks')
      .reply(200, { keys: [jwk] });
    return createBearerVerifier({
      issuer: ISSUER,
      audience,
      requiredScope: 'mcp',
      fetch: createFetch(),
      clock: systemClock,
      allowLoopback: false,
    });
  };

  it('is client_id, else azp, else undefined, beside a principal that is only (iss, sub)', async () => {
    const verifier = verify();
    const cases: [Record<string, unknown>, string | undefined][] = [
      [{ client_id: 'host-app', azp: 'other' }, 'host-app'],
      [{ azp: 'authorized-party' }, 'authorized-party'],
      [{}, undefined],
    ];
    for (const [claims, clientId] of cases) {
      const verified = await verifier(`Bearer ${await mint({ audience, claims })}`);
      expect(verified).toStrictEqual({ principal: { iss: ISSUER, sub: 'alice' }, clientId });
    }
  });
});
