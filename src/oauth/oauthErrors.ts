import * as client from 'openid-client';
import { AppError, InvalidInputError, UnavailableError, UpstreamAuthError } from '../errors/appError.js';
import { UrlPolicyError } from '../security/urlPolicy.js';

/**
 * Every openid-client / oauth4webapi failure enters the application here
 * and becomes an AppError. The cause is kept for the log; nothing the server sent is
 * shown to the user, because error descriptions can echo request data.
 */
export function oauthErrorHandler(err: unknown): never {
  if (err instanceof AppError) throw err;
  if (err instanceof client.AuthorizationResponseError) {
    // The authorization server redirected back with ?error= (e.g. the user denied).
    throw new InvalidInputError(`The sign-in was not completed (${safeCode(err.error)}). Start again.`, { cause: err });
  }
  if (err instanceof client.ResponseBodyError) {
    if (err.error === 'invalid_grant') {
      throw new InvalidInputError('This sign-in response was already used or has expired. Start again.', {
        cause: err,
      });
    }
    throw new UpstreamAuthError('The authorization server refused the request.', { cause: err });
  }
  if (err instanceof client.ClientError && isNetworkFailure(err.cause)) {
    throw new UnavailableError('The authorization server could not be reached.', { cause: err });
  }
  if (err instanceof client.ClientError) {
    throw new UpstreamAuthError('The authorization server response failed validation.', { cause: err });
  }
  if (isNetworkFailure(err)) {
    throw new UnavailableError('The authorization server could not be reached.', { cause: err });
  }
  throw new AppError('internal', 'Internal error.', { cause: err });
}

// fetch rejects with a TypeError when it cannot connect, with these names on a
// timeout, and interceptors (nock) reject with a system error code.
function isNetworkFailure(err: unknown): boolean {
  if (err instanceof TypeError) return true;
  if (!(err instanceof Error)) return false;
  const code = (err as NodeJS.ErrnoException).code;
  return (
    err.name === 'TimeoutError' || err.name === 'AbortError' || (typeof code === 'string' && /^E[A-Z]+$/.test(code))
  );
}

// Error codes are a closed ASCII vocabulary (RFC 6749 §4.1.2.1); anything else is not echoed.
function safeCode(code: string): string {
  return /^[a-z_]{1,40}$/.test(code) ? code : 'error';
}

/**
 * Why a request to a provider failed, in a few fixed words for a record (the ledger, an operator's
 * answer): an OAuth error code or an HTTP status, never the server's description nor anything it
 * echoed (a token can be among that).
 */
export function failureReason(err: unknown): string {
  if (err instanceof client.ResponseBodyError) return `refused (${safeCode(err.error)}, HTTP ${err.status})`;
  if (err instanceof client.WWWAuthenticateChallengeError) return `refused (HTTP ${err.status})`;
  if (err instanceof client.ClientError && err.cause instanceof Response) return `answered HTTP ${err.cause.status}`;
  if (isNetworkFailure(err) || (err instanceof client.ClientError && isNetworkFailure(err.cause)))
    return 'could not be reached';
  if (err instanceof UnavailableError) return 'could not be reached';
  return 'answered unexpectedly';
}

/**
 * Why a request to an authorization server failed, for an operator (/readyz, broker doctor): the
 * system error code (ECONNREFUSED, ENOTFOUND, CERT_HAS_EXPIRED), a timeout, the HTTP status, the URL
 * policy's rule or openid-client's check; never a body the server sent. No request that fails here
 * carried a secret (discovery sends none).
 */
export function failureDetail(err: unknown): string {
  let last: unknown = err;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e.cause instanceof Response) return `HTTP ${e.cause.status}`;
    if (e instanceof UrlPolicyError) return e.message;
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timed out';
    // openid-client's own codes (OAUTH_…) say less than its fixed message; a system's code says most.
    const code = (e as NodeJS.ErrnoException).code;
    if (e instanceof client.ClientError) return e.message.slice(0, 300);
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{2,60}$/.test(code)) return code;
    last = e;
  }
  return last instanceof Error ? last.message.slice(0, 300) : 'failed';
}
