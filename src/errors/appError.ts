import { isConnectionLoss } from '../db/connectionLoss.js';

export const appErrorCodes = [
  'invalid_input',
  'unauthenticated',
  'forbidden',
  'not_found',
  'invalid_transition',
  'conflict',
  'payload_too_large',
  'rate_limited',
  'upstream_auth_failed',
  'unavailable',
  'internal',
] as const;
export type AppErrorCode = (typeof appErrorCodes)[number];

export interface AppErrorOptions {
  cause?: unknown;
  /** Safe, structured data that may be shown to the caller. */
  details?: Record<string, unknown>;
  /** Overrides the default exposure of the code (see isExposedByDefault). */
  expose?: boolean;
  /** When the same request may succeed: sent as Retry-After (RFC 9110 §10.2.3). */
  retryAfterSeconds?: number;
}

// Client-side problems are safe to describe; server-side ones never leave the process.
function isExposedByDefault(code: AppErrorCode): boolean {
  return code !== 'internal' && code !== 'upstream_auth_failed' && code !== 'unavailable';
}

/** The one error type the application throws. `cause` is always kept for the log. */
export class AppError extends Error {
  readonly code: AppErrorCode;
  readonly expose: boolean;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: AppErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.expose = options.expose ?? isExposedByDefault(code);
    this.details = options.details;
    this.retryAfterSeconds =
      options.retryAfterSeconds === undefined ? undefined : Math.max(1, Math.ceil(options.retryAfterSeconds));
  }
}

export class InvalidInputError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super('invalid_input', message, options);
  }
}

export class UnauthenticatedError extends AppError {
  constructor(message = 'Sign-in required.', options?: AppErrorOptions) {
    super('unauthenticated', message, options);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'Not allowed.', options?: AppErrorOptions) {
    super('forbidden', message, options);
  }
}

export class NotFoundError extends AppError {
  constructor(message = 'Not found.', options?: AppErrorOptions) {
    super('not_found', message, options);
  }
}

export class ConflictError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super('conflict', message, options);
  }
}

/** Too many requests from one caller; `retryAfterSeconds` becomes the Retry-After header (RFC 9110 §10.2.3). */
export class RateLimitedError extends AppError {
  declare readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number, options?: AppErrorOptions) {
    super('rate_limited', message, { ...options, retryAfterSeconds });
  }
}

export class InvalidTransitionError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super('invalid_transition', message, options);
  }
}

export class UpstreamAuthError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super('upstream_auth_failed', message, options);
  }
}

export class UnavailableError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super('unavailable', message, options);
  }
}

/** A short outage is a restart or a fail-over: seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * The database cannot be reached (db/connectionLoss.ts): nothing about the request is wrong, and
 * the same request may succeed once it is back. The text is ours and fixed, so it is shown; the
 * driver's message (addresses, SQLSTATEs) stays in the cause, for the log.
 */
export class DatabaseUnavailableError extends UnavailableError {
  declare readonly retryAfterSeconds: number;

  constructor(options: Pick<AppErrorOptions, 'cause'> = {}) {
    super('The service cannot reach its database at the moment. Try again in a few seconds.', {
      ...options,
      expose: true,
      retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
    });
  }
}

/**
 * Anything that is not an AppError becomes an unexposed internal one, keeping the cause; a lost
 * database connection, thrown as it is or kept as the cause of an internal error, becomes a
 * DatabaseUnavailableError.
 */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) {
    if (err.code === 'internal' && isConnectionLoss(err.cause)) return new DatabaseUnavailableError({ cause: err });
    return err;
  }
  if (isConnectionLoss(err)) return new DatabaseUnavailableError({ cause: err });
  return new AppError('internal', 'Internal error.', { cause: err });
}
