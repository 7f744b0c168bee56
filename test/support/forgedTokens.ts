import { randomUUID } from 'node:crypto';
import { importJWK, SignJWT } from 'jose';
import nock from 'nock';
import type { BrokerStack } from './brokerStack.js';

// Tokens signed with the Report Service's own (development, private) key, for
// tests that stand in for its token endpoint with nock or read its API
// directly. They are valid at the Report Service exactly as its own are.

async function signingKey(stack: BrokerStack): Promise<{ key: Awaited<ReturnType<typeof importJWK>>; kid: string }> {
  const jwk = stack.secrets.reports.jwks.keys[0];
  if (!jwk?.kid) throw new Error('the Report Service has no signing key with a kid');
  return { key: await importJWK(jwk, 'ES256'), kid: jwk.kid };
}

export interface AccessTokenClaims {
  sub: string;
  /** Default: the Report Service API (stack.dev.reports.apiUrl). */
  audience?: string;
  /** Default: 'reports:read reports:write'. */
  scope?: string;
  jti?: string;
  /** Default 600; null leaves `exp` out. */
  expiresInSeconds?: number | null;
}

/** An RFC 9068 access token (`typ: at+jwt`) from the Report Service. */
export async function mintAccessToken(stack: BrokerStack, claims: AccessTokenClaims): Promise<string> {
  const { key, kid } = await signingKey(stack);
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({
    scope: claims.scope ?? 'reports:read reports:write',
    client_id: stack.dev.reports.brokerClientId,
  })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
    .setIssuer(stack.dev.reports.issuer)
    .setSubject(claims.sub)
    .setAudience(claims.audience ?? stack.dev.reports.apiUrl)
    .setJti(claims.jti ?? randomUUID())
    .setIssuedAt(now);
  if (claims.expiresInSeconds !== null) jwt.setExpirationTime(now + (claims.expiresInSeconds ?? 600));
  return jwt.sign(key);
}

/** An ID Token from the Report Service for the broker's client there. */
export async function mintIdToken(stack: BrokerStack, claims: { sub: string; nonce: string }): Promise<string> {
  const { key, kid } = await signingKey(stack);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ nonce: claims.nonce })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
    .setIssuer(stack.dev.reports.issuer)
    .setSubject(claims.sub)
    .setAudience(stack.dev.reports.brokerClientId)
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(key);
}

/** A token endpoint success body (RFC 6749 §5.1) carrying the given tokens and a matching ID Token. */
export async function tokenResponse(
  stack: BrokerStack,
  tokens: { sub: string; nonce: string; accessToken: string; refreshToken?: string },
): Promise<Record<string, unknown>> {
  return {
    access_token: tokens.accessToken,
    token_type: 'Bearer',
    expires_in: 600,
    scope: 'openid reports:read reports:write',
    id_token: await mintIdToken(stack, { sub: tokens.sub, nonce: tokens.nonce }),
    ...(tokens.refreshToken ? { refresh_token: tokens.refreshToken } : {}),
  };
}

/** The reports a Report Service user has, read from its API with a token minted for them. */
export async function reportsAt(stack: BrokerStack, sub: string): Promise<{ id: string; title: string }[]> {
  const token = await mintAccessToken(stack, { sub, scope: 'reports:read' });
  const response = await stack.fetch(`${stack.dev.reports.apiUrl}/reports`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  if (response.status !== 200)
    throw new Error(`the Report Service API answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { reports: { id: string; title: string }[] }).reports;
}

/**
 * Stands in for the Report Service's token endpoint (one reply). Every other
 * request to the Report Service (its JWKS, its API) still reaches the real server:
 * without allowUnmocked, nock would refuse them while this scope is active.
 */
export function reportsTokenEndpoint(stack: BrokerStack): nock.Interceptor {
  return nock(stack.dev.reports.issuer, { allowUnmocked: true }).post('/token');
}
