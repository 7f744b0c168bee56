import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { Principal } from '../auth/principal.js';
import { ForbiddenError, UnauthenticatedError, UnavailableError } from '../errors/appError.js';
import { discoverIssuerMetadata, MAX_AUTH_RESPONSE_BYTES } from '../oauth/oauthClient.js';
import {
  ACCESS_TOKEN_ALGORITHMS,
  ACCESS_TOKEN_REQUIRED_CLAIMS,
  checkAccessTokenType,
  scopesOf,
  type JwtTypAllowance,
} from '../security/accessTokenPolicy.js';
import { checkUrl } from '../security/urlPolicy.js';
import type { Clock } from '../shared/clock.js';
import { strictFetch, type Fetch } from '../shared/httpClient.js';
import { singleFlight } from '../shared/singleFlight.js';

export interface BearerVerifierOptions {
  issuer: string;
  /**
   * The only audience accepted: this server's MCP resource URL (RFC 8707 §2; MCP 2026-07-28,
   * Authorization), or MCP_TOKEN_AUDIENCE where the identity provider cannot write that URL.
   */
  audience: string;
  /** A scope every token must carry (in `scope` or `scp`), or undefined. */
  requiredScope: string | undefined;
  /** MCP_TOKEN_TYP=jwt: `typ: JWT` accepted too, on the conditions of checkAccessTokenType. */
  jwtTyp?: JwtTypAllowance | undefined;
  fetch: Fetch;
  clock: Clock;
  /** Development: a loopback issuer and key set pass the URL policy. */
  allowLoopback: boolean;
  /** Development only, on loopback: a request without Authorization acts as this principal. */
  anonymousPrincipal?: Principal;
}

/** Who a verified bearer token speaks for, and through which OAuth client. */
export interface VerifiedBearer {
  principal: Principal;
  /** The token's `client_id` (RFC 9068 §2.2), else its `azp`, else `cid` (Okta's); undefined when it names none (or for the anonymous principal). */
  clientId: string | undefined;
}

export type BearerVerifier = (authorization: string | undefined) => Promise<VerifiedBearer>;
/** Like BearerVerifier, with the token's verified claims (the operator CLI reads its role claim). */
export type ClaimsVerifier = (
  authorization: string | undefined,
) => Promise<VerifiedBearer & { claims: Readonly<Record<string, unknown>> }>;

const CACHE_MAX = 10_000;

/**
 * Verifies `Authorization: Bearer <JWT>` with jose against the issuer's JWKS
 * (found through its discovery document, cached by jose), pinning the
 * algorithms, the issuer, the audience and the RFC 9068 `typ`. Verified tokens
 * are remembered until they expire, so a busy client costs one signature check
 * per token. The token itself is never stored or passed on. Throws
 * UnauthenticatedError / ForbiddenError for the token, UnavailableError when
 * the issuer's keys cannot be had.
 */
export function createBearerVerifier(options: BearerVerifierOptions): BearerVerifier {
  const verify = createClaimsVerifier(options);
  return async (authorization) => {
    const { principal, clientId } = await verify(authorization);
    return { principal, clientId };
  };
}

const NO_CLAIMS: Readonly<Record<string, unknown>> = Object.freeze({});

/** The verifier behind createBearerVerifier, returning the verified claims too. */
export function createClaimsVerifier(options: BearerVerifierOptions): ClaimsVerifier {
  checkUrl(options.issuer, { allowLoopback: options.allowLoopback }, 'MCP token issuer');
  const keys = singleFlight(() => discoverJwks(options), { keepResult: true });
  // OIDC_ISSUER is kept without a trailing slash (config/config.ts); an issuer at the root of its host
  // writes one in `iss` (Auth0's https://tenant.auth0.com/), the same URL (RFC 3986 §6.2.3).
  const issuers = [...new Set([options.issuer, new URL(options.issuer).href])];
  const verified = new Map<
    string,
    { principal: Principal; clientId: string | undefined; claims: Readonly<Record<string, unknown>>; exp: number }
  >();

  return async (authorization) => {
    if (authorization === undefined && options.anonymousPrincipal)
      return { principal: options.anonymousPrincipal, clientId: undefined, claims: NO_CLAIMS };
    const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(authorization ?? '');
    if (!match?.[1]) throw new UnauthenticatedError('A bearer access token is required.');
    const token = match[1];
    const now = options.clock.now().getTime() / 1000;
    const hit = verified.get(token);
    if (hit && hit.exp > now) return hit;

    let payload;
    try {
      let protectedHeader;
      ({ payload, protectedHeader } = await jwtVerify(token, await keys(), {
        issuer: issuers,
        audience: options.audience,
        algorithms: ACCESS_TOKEN_ALGORITHMS,
        requiredClaims: ['sub', ...ACCESS_TOKEN_REQUIRED_CLAIMS],
        currentDate: options.clock.now(),
      }));
      checkAccessTokenType(protectedHeader, payload, options.jwtTyp);
    } catch (err) {
      if (err instanceof errors.JOSEError)
        throw new UnauthenticatedError('The access token is not valid for this server.', { cause: err });
      throw err;
    }
    if (options.requiredScope && !scopesOf(payload).includes(options.requiredScope)) {
      throw new ForbiddenError(`The access token lacks the scope "${options.requiredScope}".`, {
        details: { scope: options.requiredScope },
      });
    }
    const principal = { iss: payload.iss!, sub: payload.sub! };
    const clientId = [payload['client_id'], payload['azp'], payload['cid']].find(
      (v): v is string => typeof v === 'string' && v !== '',
    );
    if (verified.size >= CACHE_MAX) verified.delete(verified.keys().next().value!);
    const entry = { principal, clientId, claims: Object.freeze({ ...payload }), exp: payload.exp! };
    verified.set(token, entry);
    return entry;
  };
}

/**
 * The issuer's key set. Its URL comes from openid-client's discovery (https,
 * `issuer` equal to ours) and must pass the URL policy on the issuer's own
 * host: whoever serves the keys can mint tokens. Neither document is fetched
 * through a redirect, and neither may exceed MAX_AUTH_RESPONSE_BYTES.
 */
async function discoverJwks(options: BearerVerifierOptions): Promise<JWTVerifyGetKey> {
  const metadata = await discoverIssuerMetadata({ issuer: options.issuer, fetch: options.fetch });
  let jwksUrl: URL;
  try {
    jwksUrl = checkUrl(
      metadata.jwksUri ?? '',
      { allowLoopback: options.allowLoopback, expectedHost: new URL(options.issuer).host },
      `the jwks_uri of ${options.issuer}`,
    );
  } catch (err) {
    throw new UnavailableError(`The key set of ${options.issuer} is refused.`, { cause: err });
  }
  const fetchKeys = strictFetch(options.fetch, { maxBytes: MAX_AUTH_RESPONSE_BYTES });
  const remote = createRemoteJWKSet(jwksUrl, { [customFetch]: (url, init) => fetchKeys(url, init as RequestInit) });
  return async (header, token) => {
    try {
      return await remote(header, token);
    } catch (err) {
      // No key for this token is the token's fault; anything else is the key set's.
      if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) throw err;
      throw new UnavailableError(`The key set of ${options.issuer} could not be loaded.`, { cause: err });
    }
  };
}
