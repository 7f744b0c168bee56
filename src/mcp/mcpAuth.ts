import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { Principal } from '../auth/principal.js';
import { AppError, ForbiddenError, UnauthenticatedError } from '../errors/appError.js';
import type { Clock } from '../shared/clock.js';
import type { Fetch } from '../shared/httpClient.js';

export interface BearerVerifierOptions {
  issuer: string;
  /** This server's MCP resource URL: the only audience accepted (RFC 8707, spec brief §8). */
  audience: string;
  /** A scope every token must carry, or undefined. */
  requiredScope: string | undefined;
  fetch: Fetch;
  clock: Clock;
  /** Development only, on loopback: a request without Authorization acts as this principal. */
  anonymousPrincipal?: Principal;
}

export type BearerVerifier = (authorization: string | undefined) => Promise<Principal>;
/** Like BearerVerifier, with the token's verified claims (the operator CLI reads its role claim). */
export type ClaimsVerifier = (authorization: string | undefined) => Promise<{ principal: Principal; claims: Readonly<Record<string, unknown>> }>;

const ALGORITHMS = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'];
const CACHE_MAX = 10_000;

/**
 * Verifies `Authorization: Bearer <JWT>` with jose against the issuer's JWKS
 * (found through its discovery document, cached by jose), pinning the
 * algorithms, the issuer and the audience. Verified tokens are remembered
 * until they expire, so a busy client costs one signature check per token.
 * The token itself is never stored or passed on; only its principal is.
 */
export function createBearerVerifier(options: BearerVerifierOptions): BearerVerifier {
  const verify = createClaimsVerifier(options);
  return async (authorization) => (await verify(authorization)).principal;
}

const NO_CLAIMS: Readonly<Record<string, unknown>> = Object.freeze({});

/** The verifier behind createBearerVerifier, returning the verified claims too. */
export function createClaimsVerifier(options: BearerVerifierOptions): ClaimsVerifier {
  let jwks: Promise<JWTVerifyGetKey> | undefined;
  const keys = (): Promise<JWTVerifyGetKey> => {
    jwks ??= discoverJwks(options).catch((err: unknown) => {
      jwks = undefined;
      throw err;
    });
    return jwks;
  };
  const verified = new Map<string, { principal: Principal; claims: Readonly<Record<string, unknown>>; exp: number }>();

  return async (authorization) => {
    if (authorization === undefined && options.anonymousPrincipal) return { principal: options.anonymousPrincipal, claims: NO_CLAIMS };
    const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(authorization ?? '');
    if (!match?.[1]) throw new UnauthenticatedError('A bearer access token is required.');
    const token = match[1];
    const now = options.clock.now().getTime() / 1000;
    const hit = verified.get(token);
    if (hit && hit.exp > now) return hit;

    let payload;
    try {
      ({ payload } = await jwtVerify(token, await keys(), {
        issuer: options.issuer,
        audience: options.audience,
        algorithms: ALGORITHMS,
        requiredClaims: ['sub', 'exp'],
        currentDate: options.clock.now(),
      }));
    } catch (err) {
      if (err instanceof errors.JOSEError) throw new UnauthenticatedError('The access token is not valid for this server.', { cause: err });
      throw err;
    }
    const scopes = typeof payload['scope'] === 'string' ? payload['scope'].split(' ') : [];
    if (options.requiredScope && !scopes.includes(options.requiredScope)) {
      throw new ForbiddenError(`The access token lacks the scope "${options.requiredScope}".`, { details: { scope: options.requiredScope } });
    }
    const principal = { iss: payload.iss!, sub: payload.sub! };
    if (verified.size >= CACHE_MAX) verified.delete(verified.keys().next().value!);
    const entry = { principal, claims: Object.freeze({ ...payload }), exp: payload.exp! };
    verified.set(token, entry);
    return entry;
  };
}

async function discoverJwks(options: BearerVerifierOptions): Promise<JWTVerifyGetKey> {
  const response = await options.fetch(new URL(`${options.issuer}/.well-known/openid-configuration`));
  const metadata = (await response.json().catch(() => ({}))) as { issuer?: unknown; jwks_uri?: unknown };
  if (!response.ok || metadata.issuer !== options.issuer || typeof metadata.jwks_uri !== 'string') {
    throw new AppError('unavailable', 'The identity provider metadata could not be loaded.');
  }
  return createRemoteJWKSet(new URL(metadata.jwks_uri), { [customFetch]: (url, init) => options.fetch(url, init as RequestInit) });
}
