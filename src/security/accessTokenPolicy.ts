import { errors, type JWTPayload, type JWTHeaderParameters } from 'jose';

// What every JWT access token the broker verifies must satisfy, whoever issued
// it: an asymmetric algorithm from this list (never "none", never an HMAC
// keyed with something public) and an expiry.

export const ACCESS_TOKEN_ALGORITHMS = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'];
export const ACCESS_TOKEN_REQUIRED_CLAIMS = ['exp'];

/**
 * MCP_TOKEN_TYP=jwt: a token whose `typ` is `JWT` may still be an access token, as the identity
 * provider marks every token so (Microsoft Entra ID always; Keycloak unless the client asks for
 * at+jwt). `signInClientId` is OIDC_CLIENT_ID: its ID Tokens are the ones the broker's own users hold.
 */
export interface JwtTypAllowance {
  signInClientId: string;
}

/**
 * RFC 9068 §4: an access token's `typ` is `at+jwt`, which tells it apart from
 * an ID Token signed by the same keys. Media type names are case-insensitive
 * and may carry the `application/` prefix (RFC 7515 §4.1.9). A token without
 * `typ` is accepted, because issuers that predate RFC 9068 omit it; a token
 * whose `typ` says something else is not an access token. With `jwtTyp`,
 * `typ: JWT` passes only for what an ID Token never is (OpenID Connect Core
 * §2): a token carrying scopes, and not addressed to the sign-in client.
 */
export function checkAccessTokenType(header: JWTHeaderParameters, payload: JWTPayload, jwtTyp?: JwtTypAllowance): void {
  if (header.typ === undefined) return;
  const typ = header.typ.toLowerCase().replace(/^application\//, '');
  if (typ === 'at+jwt') return;
  if (typ === 'jwt' && jwtTyp && hasScopeClaim(payload) && !audiences(payload).includes(jwtTyp.signInClientId)) return;
  throw new errors.JWTClaimValidationFailed('unexpected "typ" JWT header value', payload, 'typ', 'check_failed');
}

/**
 * The scopes a token grants: `scope` (RFC 9068 §2.2.3, space-separated) and `scp`, which Okta's
 * custom authorization servers write as an array and Microsoft Entra ID as a space-separated string.
 */
export function scopesOf(payload: JWTPayload): string[] {
  return [payload['scope'], payload['scp']].flatMap((value) =>
    typeof value === 'string'
      ? value.split(' ').filter((s) => s !== '')
      : Array.isArray(value)
        ? value.filter((s): s is string => typeof s === 'string')
        : [],
  );
}

function hasScopeClaim(payload: JWTPayload): boolean {
  return scopesOf(payload).length > 0;
}

function audiences(payload: JWTPayload): string[] {
  return typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
}
