import * as client from 'openid-client';
import { AppError, InvalidInputError, UnavailableError, UpstreamAuthError } from '../errors/appError.js';

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
