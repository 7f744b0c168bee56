import nock from 'nock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBearerVerifier } from '../../src/mcp/mcpAuth.js';
import { systemClock } from '../../src/shared/clock.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { fakeIdentityProvider, type FakeIdentityProvider } from '../support/idpTokens.js';
import { mcpPost, meta } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// POST /mcp with the access tokens Keycloak, Microsoft Entra ID, Auth0 and Okta issue for the
// broker, as their documentation shapes them (docs/identity-providers.md): accepted with the
// settings that page gives, and never an ID Token in their place.

const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta() } };
// Entra ID: the API app registration MCP tokens are for, and the broker's own sign-in app.
const API_CLIENT_ID = 'b7a0e5c4-91d2-4f7e-8c3b-5e6a2d1f0c98';
const SIGN_IN_CLIENT_ID = '3f1b4c2a-0d7e-4a35-9b8e-2c6f1d0a9e41';

let idp: FakeIdentityProvider;
beforeAll(async () => {
  idp = await fakeIdentityProvider();
});
afterAll(() => {
  nock.cleanAll();
});

/** Microsoft Entra ID v2 access token for the API app: typ JWT, aud its client id, scp a string. */
const entraAccessToken = (scp = 'mcp') =>
  idp.mint({
    typ: 'JWT',
    aud: API_CLIENT_ID,
    claims: { ver: '2.0', azp: '9c2d7e61-host', azpacr: '0', scp, oid: 'oid-1', tid: 'tenant-1', roles: ['operator'] },
  });

describe('tokens of Keycloak, Auth0 and Okta, with the default settings', () => {
  const { stack } = useBrokerStack({ mcpIssuer: 'https://idp.example.test' });

  it('accepts a Keycloak token: at+jwt (its client asks so), the audience mapper beside account, scope a string', async () => {
    const token = await idp.mint({
      typ: 'at+jwt',
      aud: [stack.mcpResourceUrl, 'account'],
      claims: { typ: 'Bearer', azp: 'mcp-host', scope: 'openid profile mcp', realm_access: { roles: ['operator'] } },
    });
    const response = await mcpPost(stack, listTools, { token });
    expect(response.status).toBe(200);
    expect(response.json.result?.['tools']).toEqual(expect.any(Array));
  });

  it('refuses a Keycloak token of its default typ JWT: without MCP_TOKEN_TYP=jwt only at+jwt (or none) passes', async () => {
    const token = await idp.mint({
      typ: 'JWT',
      aud: [stack.mcpResourceUrl, 'account'],
      claims: { typ: 'Bearer', azp: 'mcp-host', scope: 'openid profile mcp' },
    });
    const response = await mcpPost(stack, listTools, { token });
    expect(response.status).toBe(401);
    expect(response.json['error']).toBe('invalid_token');
  });

  it("accepts an Auth0 token of the RFC 9068 profile: the tenant's issuer with its slash, its audience beside userinfo", async () => {
    const token = await idp.mint({
      typ: 'at+jwt',
      iss: `${idp.issuer}/`,
      aud: [stack.mcpResourceUrl, `${idp.issuer}/userinfo`],
      claims: {
        client_id: 'host-client',
        jti: 'jti-1',
        scope: 'openid profile mcp',
        'https://broker.example.com/roles': ['operator'],
      },
    });
    expect((await mcpPost(stack, listTools, { token })).status).toBe(200);
  });

  it('accepts an Okta custom authorization server token: scopes in an scp array, the client in cid', async () => {
    const okta = (scp: string[]) =>
      idp.mint({
        typ: null,
        aud: stack.mcpResourceUrl,
        claims: { ver: 1, jti: 'AT.1', cid: '0oa-host', uid: '00u-1', scp, groups: ['Everyone', 'operators'] },
      });
    expect((await mcpPost(stack, listTools, { token: await okta(['openid', 'mcp']) })).status).toBe(200);
    const lacking = await mcpPost(stack, listTools, { token: await okta(['openid', 'profile']) });
    expect(lacking.status).toBe(403);
    expect(lacking.json['error']).toBe('insufficient_scope');
    // The client a flow is bound to (mcp/mcpAuth.ts VerifiedBearer.clientId) is Okta's cid.
    const verify = createBearerVerifier({
      issuer: idp.issuer,
      audience: stack.mcpResourceUrl,
      requiredScope: 'mcp',
      fetch: createFetch(),
      clock: systemClock,
      allowLoopback: false,
    });
    expect((await verify(`Bearer ${await okta(['mcp'])}`)).clientId).toBe('0oa-host');
  });

  it('refuses an Entra ID v2 access token without the settings: typ JWT and its API client id as audience', async () => {
    const response = await mcpPost(stack, listTools, { token: await entraAccessToken() });
    expect(response.status).toBe(401);
    expect(response.json['error']).toBe('invalid_token');
  });

  it('advertises the resource URL and the scope it checks', async () => {
    const response = await stack.fetch(`${stack.brokerUrl}/.well-known/oauth-protected-resource/mcp`);
    expect(await response.json()).toMatchObject({ resource: stack.mcpResourceUrl, scopes_supported: ['mcp'] });
  });
});

describe('Microsoft Entra ID tokens, with MCP_TOKEN_AUDIENCE, MCP_TOKEN_TYP=jwt and MCP_ADVERTISED_SCOPE', () => {
  const advertised = `api://${API_CLIENT_ID}/mcp`;
  const { stack } = useBrokerStack({
    mcpIssuer: 'https://idp.example.test',
    mcp: { tokenAudience: API_CLIENT_ID, jwtTyp: { signInClientId: SIGN_IN_CLIENT_ID }, advertisedScope: advertised },
  });

  it('accepts a v2 access token for the API app: typ JWT, aud its client id, mcp in scp', async () => {
    const response = await mcpPost(stack, listTools, { token: await entraAccessToken() });
    expect(response.status).toBe(200);
    expect(response.json.result?.['tools']).toEqual(expect.any(Array));
  });

  it("refuses the sign-in client's ID Token, and a typ JWT token for the API without scopes", async () => {
    const idToken = await idp.mint({
      typ: 'JWT',
      aud: SIGN_IN_CLIENT_ID,
      claims: { ver: '2.0', nonce: 'n-1', oid: 'oid-1', tid: 'tenant-1', roles: ['operator'] },
    });
    // An ID Token issued to the API app itself, were it ever a sign-in client: its audience, no scopes.
    const apiIdToken = await idp.mint({
      typ: 'JWT',
      aud: API_CLIENT_ID,
      claims: { ver: '2.0', nonce: 'n-2', oid: 'oid-1', tid: 'tenant-1' },
    });
    for (const token of [idToken, apiIdToken]) {
      const response = await mcpPost(stack, listTools, { token });
      expect(response.status).toBe(401);
      expect(response.json['error']).toBe('invalid_token');
    }
  });

  it('takes MCP_TOKEN_AUDIENCE in place of the resource URL, not beside it', async () => {
    const token = await idp.mint({ typ: 'at+jwt', aud: stack.mcpResourceUrl, claims: { scope: 'mcp' } });
    expect((await mcpPost(stack, listTools, { token })).status).toBe(401);
  });

  it('tells hosts to ask for the api:// scope, in its metadata and its challenges, while the token carries mcp', async () => {
    const metadata = await stack.fetch(`${stack.brokerUrl}/.well-known/oauth-protected-resource/mcp`);
    expect(await metadata.json()).toMatchObject({ resource: stack.mcpResourceUrl, scopes_supported: [advertised] });
    const anonymous = await mcpPost(stack, listTools);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toContain(`scope="${advertised}"`);
    const lacking = await mcpPost(stack, listTools, { token: await entraAccessToken('User.Read') });
    expect(lacking.status).toBe(403);
    expect(lacking.headers.get('www-authenticate')).toContain(`error="insufficient_scope", scope="${advertised}"`);
  });
});
