import { errors, type JWTPayload, type JWTHeaderParameters } from 'jose';

// What every JWT access token the broker verifies must satisfy, whoever issued
// it: an asymmetric algorithm from this list (never "none", never an HMAC
// keyed with something public) and an expiry.

export const ACCESS_TOKEN_ALGORITHMS = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'];
export const ACCESS_TOKEN_REQUIRED_CLAIMS = ['exp'];

/**
 * RFC 9068 §4: an access token's `typ` is `at+jwt`, which tells it apart from
 * an ID Token signed by the same keys. Media type names are case-insensitive
 * and may carry the `application/` prefix (RFC 7515 §4.1.9). A token without
 * `typ` is accepted, because issuers that predate RFC 9068 omit it; a token
 * whose `typ` says something else is not an access token.
 */
export function checkAccessTokenType(header: JWTHeaderParameters, payload: JWTPayload): void {
  if (header.typ === undefined) return;
  if (header.typ.toLowerCase().replace(/^application\//, '') !== 'at+jwt') {
    throw new errors.JWTClaimValidationFailed('unexpected "typ" JWT header value', payload, 'typ', 'check_failed');
  }
}
