import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { OAuthError, OAuthErrorCode, type AuthInfo, type OAuthTokenVerifier } from '@modelcontextprotocol/server';
import type { Principal } from '../src/auth/principal.js';
import type { Fetch } from '../src/shared/httpClient.js';

export interface PeerVerifierOptions {
  issuer: string;
  /** The broker's MCP resource URL: the peer accepts the very tokens the broker accepts. */
  audience: string;
  fetch: Fetch;
}

// The same pins as src/mcp/mcpAuth.ts.
const ALGORITHMS = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'];
const CACHE_MAX = 10_000;

/**
 * The peer's OAuthTokenVerifier: jose against the issuer's JWKS (found via its
 * discovery document, cached by jose), pinning issuer, audience and algorithms.
 * Like the broker, it remembers a verified token until it expires, so both
 * servers pay one signature check per token and the bench compares the rest.
 */
export function createPeerVerifier(options: PeerVerifierOptions): OAuthTokenVerifier {
  let jwks: Promise<JWTVerifyGetKey> | undefined;
  const verified = new Map<string, AuthInfo>();
  return {
    async verifyAccessToken(token) {
      const hit = verified.get(token);
      if (hit?.expiresAt !== undefined && hit.expiresAt > Date.now() / 1000) return hit;
      jwks ??= discoverJwks(options).catch((err: unknown) => {
        jwks = undefined;
        throw err;
      });
      let payload;
      try {
        ({ payload } = await jwtVerify(token, await jwks, {
          issuer: options.issuer,
          audience: options.audience,
          algorithms: ALGORITHMS,
          requiredClaims: ['sub', 'exp'],
        }));
      } catch (err) {
        if (err instanceof errors.JOSEError)
          throw new OAuthError(OAuthErrorCode.InvalidToken, 'The access token is not valid for this server.');
        throw err;
      }
      const principal: Principal = { iss: payload.iss ?? options.issuer, sub: payload.sub ?? '' };
      const info: AuthInfo = {
        token,
        clientId: typeof payload['client_id'] === 'string' ? payload['client_id'] : 'unknown',
        scopes: typeof payload['scope'] === 'string' ? payload['scope'].split(' ') : [],
        expiresAt: payload.exp ?? 0,
        resource: new URL(options.audience),
        extra: { principal },
      };
      if (verified.size >= CACHE_MAX) verified.delete(verified.keys().next().value!);
      verified.set(token, info);
      return info;
    },
  };
}

/** The principal the verifier put into AuthInfo, or undefined for an unauthenticated request. */
export function principalOf(info: AuthInfo | undefined): Principal | undefined {
  const value = info?.extra?.['principal'];
  return typeof value === 'object' && value !== null && 'iss' in value && 'sub' in value
    ? (value as Principal)
    : undefined;
}

async function discoverJwks(options: PeerVerifierOptions): Promise<JWTVerifyGetKey> {
  const response = await options.fetch(new URL(`${options.issuer}/.well-known/openid-configuration`));
  const metadata = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
  if (!response.ok || metadata.issuer !== options.issuer || typeof metadata.jwks_uri !== 'string')
    throw new Error('peer: the issuer metadata could not be loaded');
  return createRemoteJWKSet(new URL(metadata.jwks_uri), {
    [customFetch]: (url, init) => options.fetch(url, init as RequestInit),
  });
}
