import nock from 'nock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticateOperator, OperatorAuthError } from '../../src/cli/operatorAuth.js';
import { loadConfig } from '../../src/config/config.js';
import { fakeIdentityProvider, type FakeIdentityProvider } from '../support/idpTokens.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// The operator CLI's BROKER_OPERATOR_TOKEN as each identity provider issues it: verified as an MCP
// token is (audience, typ), then its role read from the claim OPERATOR_ROLE_CLAIM names
// (docs/identity-providers.md gives each provider's settings used here).

const key = Buffer.alloc(32, 7).toString('base64url');
const production = {
  NODE_ENV: 'production',
  PUBLIC_URL: 'https://broker.example.com',
  OIDC_ISSUER: 'https://idp.example.test',
  OIDC_CLIENT_ID: 'broker-sign-in',
  OIDC_CLIENT_SECRET: 'client-secret-canary',
  SECRET_KEYS: `k1:${key}`,
  DATABASE_URL: 'postgres://broker:pw@db.example.com:5432/broker',
  TLS_CERT_FILE: '/etc/broker/tls.pem',
  TLS_KEY_FILE: '/etc/broker/tls-key.pem',
};
const RESOURCE = 'https://broker.example.com/mcp';
const API_CLIENT_ID = 'b7a0e5c4-91d2-4f7e-8c3b-5e6a2d1f0c98';

let idp: FakeIdentityProvider;
let db: TestDb;
beforeAll(async () => {
  idp = await fakeIdentityProvider();
  db = await createTestDb();
});
afterAll(async () => {
  nock.cleanAll();
  await db.drop();
});

function operatorWith(token: string, env: Record<string, string>) {
  return authenticateOperator(
    loadConfig({ ...production, ...env, BROKER_OPERATOR_TOKEN: token }),
    db.pool,
    'ledger verify',
  );
}

describe("the operator CLI's token", () => {
  it("takes Keycloak's realm roles, nested in realm_access.roles", async () => {
    const token = await idp.mint({
      typ: 'at+jwt',
      aud: [RESOURCE, 'account'],
      sub: 'kc-ops',
      claims: { typ: 'Bearer', azp: 'broker-cli', scope: 'openid', realm_access: { roles: ['broker-operator'] } },
    });
    const operator = await operatorWith(token, {
      OPERATOR_ROLE_CLAIM: 'realm_access.roles',
      OPERATOR_ROLE: 'broker-operator',
    });
    expect(operator).toEqual({ actor: 'cli:kc-ops', subject: { iss: idp.issuer, sub: 'kc-ops' } });
  });

  it("takes Auth0's namespaced role claim, a URL with dots, from its issuer written with a trailing slash", async () => {
    const token = await idp.mint({
      typ: 'at+jwt',
      iss: `${idp.issuer}/`,
      aud: RESOURCE,
      sub: 'auth0|ops',
      claims: { client_id: 'broker-cli', scope: 'openid', 'https://broker.example.com/roles': ['operator'] },
    });
    const operator = await operatorWith(token, { OPERATOR_ROLE_CLAIM: 'https://broker.example.com/roles' });
    expect(operator).toEqual({ actor: 'cli:auth0|ops', subject: { iss: `${idp.issuer}/`, sub: 'auth0|ops' } });
  });

  it("takes Okta's groups claim, and refuses and records a user outside the group", async () => {
    const okta = (sub: string, groups: string[]) =>
      idp.mint({ typ: null, aud: RESOURCE, sub, claims: { cid: '0oa-cli', scp: ['openid'], groups } });
    const env = { OPERATOR_ROLE_CLAIM: 'groups', OPERATOR_ROLE: 'broker-operators' };
    expect((await operatorWith(await okta('okta-ops', ['Everyone', 'broker-operators']), env)).actor).toBe(
      'cli:okta-ops',
    );
    const refusal = await operatorWith(await okta('okta-user', ['Everyone']), env).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(OperatorAuthError);
    expect((refusal as OperatorAuthError).exitCode).toBe(3);
    const recorded = await db.pool.query(
      "SELECT reason FROM operator_actions WHERE action = 'access_refused' AND actor = 'cli:okta-user'",
    );
    expect(recorded.rows).toEqual([{ reason: 'not an operator: broker ledger verify' }]);
  });

  it("takes Entra ID's app roles in an access token for the API app, and never the sign-in client's ID Token", async () => {
    const env = { OPERATOR_ROLE_CLAIM: 'roles', MCP_TOKEN_AUDIENCE: API_CLIENT_ID, MCP_TOKEN_TYP: 'jwt' };
    const accessToken = await idp.mint({
      typ: 'JWT',
      aud: API_CLIENT_ID,
      sub: 'entra-ops',
      claims: { ver: '2.0', azp: 'az-cli', scp: 'mcp', roles: ['operator'] },
    });
    expect((await operatorWith(accessToken, env)).actor).toBe('cli:entra-ops');
    const idToken = await idp.mint({
      typ: 'JWT',
      aud: production.OIDC_CLIENT_ID,
      sub: 'entra-ops',
      claims: { ver: '2.0', nonce: 'n-1', roles: ['operator'] },
    });
    const refusal = await operatorWith(idToken, env).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(OperatorAuthError);
    expect((refusal as OperatorAuthError).exitCode).toBe(2);
    expect((refusal as Error).message).not.toContain(idToken);
  });
});
