import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import nock from 'nock';

// An enterprise identity provider played by nock: its discovery document and key set on its own
// host, and tokens signed with its RS256 key in the shapes Keycloak, Microsoft Entra ID, Auth0 and
// Okta issue (their claims as docs/identity-providers.md cites them). Only the signature is real;
// what each provider would put in the token is the test's to say.

export const IDP_ISSUER = 'https://idp.example.test';

export interface MintOptions {
  /** The JOSE header's typ; null leaves it out. */
  typ: string | null;
  aud: string | string[];
  sub?: string;
  /** Default: the issuer as configured; Auth0 writes its root issuer with a trailing slash. */
  iss?: string;
  claims: Record<string, unknown>;
}

export interface FakeIdentityProvider {
  issuer: string;
  mint(options: MintOptions): Promise<string>;
}

/** Serves the issuer's discovery and keys (until nock.cleanAll) and mints its tokens. */
export async function fakeIdentityProvider(issuer = IDP_ISSUER): Promise<FakeIdentityProvider> {
  const pair = await generateKeyPair('RS256');
  const privateKey: CryptoKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' };
  nock(issuer)
    .persist()
    .get('/.well-known/openid-configuration')
    .reply(200, {
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/keys`,
      response_types_supported: ['code'],
    })
    .get('/keys')
    .reply(200, { keys: [jwk] });
  return {
    issuer,
    mint: ({ typ, aud, sub = 'user-1', iss = issuer, claims }) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'idp-1', ...(typ === null ? {} : { typ }) })
        .setIssuer(iss)
        .setSubject(sub)
        .setAudience(aud)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey),
  };
}
