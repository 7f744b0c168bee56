import type { ConformedTokenResponse, Conformer, RawTokenResponse, StandardTokenBody } from './conformer.js';
import {
  bodyObject,
  invalidResponse,
  isObject,
  pickExtras,
  providerError,
  secretsIn,
  type JsonObject,
  type Secrets,
} from './responseFields.js';

/** What makes one provider family's answer differ from RFC 6749 §5. */
export interface FamilyRules {
  /** The scope separator the provider uses instead of RFC 6749 §3.3's space. */
  scopeSeparator?: ',';
  /** Decode a string body as form data whatever its Content-Type says. */
  formByDefault?: boolean;
  /** The provider's own error convention, read before RFC 6749's `error` member. */
  errorIn?: (body: JsonObject) => { code: unknown; description?: unknown } | undefined;
  /** The object that holds the token members (default: the body), or why the answer holds no usable one. */
  tokenIn?: (body: JsonObject) => JsonObject | string;
  /** The provider's error codes that have an RFC 6749 §5.2 name; the provider's code is kept in the description. */
  errorCodes?: ReadonlyMap<string, string>;
  /** The provider's names for what RFC 6750 calls a bearer token (Slack: `user`, `bot`). */
  bearerTypes?: readonly string[];
  /** Paths of the connection metadata to keep. */
  extras?: readonly string[];
  /** Why the answer's metadata makes the connection unusable, if it does. */
  check?: (body: JsonObject) => string | undefined;
}

// RFC 6749 Appendix A.12 and A.17: access and refresh tokens are VSCHAR
// (%x20-7E), so a value with CR/LF can never reach an Authorization header.
const VSCHAR = /^[\x20-\x7E]+$/;
// RFC 6749 Appendix A.4: a scope token is NQCHAR.
const NQCHAR = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const MAX_LIFETIME_SECONDS = 10 * 366 * 24 * 3600;

/** `expires_in` as whole seconds; a numeric string counts (GitHub sends "28800"). Anything else is treated as absent, as RFC 6749 §5.1 allows. */
function lifetime(value: unknown): number | undefined {
  const seconds =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\s*\d{1,12}(\.\d+)?\s*$/.test(value)
        ? Number(value)
        : NaN;
  if (!Number.isFinite(seconds) || seconds > MAX_LIFETIME_SECONDS) return undefined;
  const whole = Math.floor(seconds);
  return whole > 0 ? whole : undefined;
}

function scopeOf(value: unknown, separator: ',' | undefined): string | undefined {
  const text =
    typeof value === 'string'
      ? value
      : Array.isArray(value) && value.every((item) => typeof item === 'string')
        ? value.join(' ')
        : undefined;
  if (text === undefined) return undefined;
  const parts = text.split(separator === ',' ? /[\s,]+/ : /\s+/);
  return parts.filter((part) => NQCHAR.test(part)).join(' ');
}

function statusError(status: unknown): ConformedTokenResponse {
  const shown = typeof status === 'number' && Number.isInteger(status) ? `HTTP ${status}` : 'an unknown status';
  if (typeof status === 'number' && status >= 500) {
    return {
      status: 400,
      body: { error: 'temporarily_unavailable', error_description: `The token endpoint failed (${shown}).` },
    };
  }
  return invalidResponse(`The token endpoint answered ${shown} without an OAuth error.`);
}

function tokenBody(source: JsonObject, rules: FamilyRules): StandardTokenBody | string {
  const accessToken = source['access_token'];
  if (typeof accessToken !== 'string' || !VSCHAR.test(accessToken))
    return 'The token response has no usable access_token.';
  const tokenType = source['token_type'];
  // A missing token_type is read as Bearer (LinkedIn omits it); any other scheme cannot be sent by the broker.
  const bearer =
    tokenType === undefined ||
    (typeof tokenType === 'string' &&
      (tokenType.toLowerCase() === 'bearer' || (rules.bearerTypes ?? []).includes(tokenType)));
  if (!bearer) return 'The token endpoint issued a token that is not a Bearer token.';
  const body: StandardTokenBody = { access_token: accessToken, token_type: 'Bearer' };
  const expiresIn = lifetime(source['expires_in']);
  if (expiresIn !== undefined) body.expires_in = expiresIn;
  // Notion sends `refresh_token: null`; openid-client refuses a refresh_token that is not a string.
  const refreshToken = source['refresh_token'];
  if (typeof refreshToken === 'string' && VSCHAR.test(refreshToken)) body.refresh_token = refreshToken;
  const scope = scopeOf(source['scope'], rules.scopeSeparator);
  if (scope !== undefined) body.scope = scope;
  const idToken = source['id_token'];
  if (typeof idToken === 'string' && VSCHAR.test(idToken)) body.id_token = idToken;
  return body;
}

function familyError(
  code: unknown,
  description: unknown,
  rules: FamilyRules,
  secrets: Secrets,
): ConformedTokenResponse {
  const rfcCode = typeof code === 'string' ? rules.errorCodes?.get(code) : undefined;
  if (rfcCode === undefined) return providerError(code, description, secrets);
  return providerError(
    rfcCode,
    typeof description === 'string' && description !== '' ? `${String(code)}: ${description}` : code,
    secrets,
  );
}

function hasError(body: JsonObject): boolean {
  return body['error'] !== undefined && body['error'] !== null;
}

/** Conforms one answer under a family's rules; every family conformer is this with its rules. */
export function conformWith(
  raw: RawTokenResponse,
  rules: FamilyRules,
  keep: readonly string[] = [],
): ConformedTokenResponse {
  if (!isObject(raw)) return invalidResponse('The token endpoint gave no answer.');
  const body = bodyObject(raw, rules.formByDefault ?? false);
  const succeeded = typeof raw.status === 'number' && raw.status >= 200 && raw.status < 300;
  if (body === undefined)
    return succeeded ? invalidResponse('The token endpoint answered without a JSON object.') : statusError(raw.status);
  const secrets: Secrets = secretsIn(body);
  const own = rules.errorIn?.(body);
  if (own !== undefined) return familyError(own.code, own.description, rules, secrets);
  // An error body counts whatever the status: GitHub sends it with HTTP 200.
  if (hasError(body)) return familyError(body['error'], body['error_description'], rules, secrets);
  if (!succeeded) return statusError(raw.status);
  const problem = rules.check?.(body);
  if (problem !== undefined) return invalidResponse(problem);
  const source = rules.tokenIn ? rules.tokenIn(body) : body;
  if (typeof source === 'string') return invalidResponse(source);
  const token = tokenBody(source, rules);
  if (typeof token === 'string') return invalidResponse(token);
  return { status: 200, body: token, extras: pickExtras(body, [...(rules.extras ?? []), ...keep], secrets) };
}

/** RFC 6749 §5 as written, with the common slips mended: a string `expires_in`, `token_type` in any case, a null or empty `refresh_token`. */
export const standard: Conformer = (raw, keep) => conformWith(raw, {}, keep);
