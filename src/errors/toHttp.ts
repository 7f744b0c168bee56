import { RateLimitedError, toAppError, type AppErrorCode } from './appError.js';

// The ONLY mapping from AppError to HTTP (style.md B4.3).
const statusByCode: Record<AppErrorCode, number> = {
  invalid_input: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  invalid_transition: 409,
  conflict: 409,
  rate_limited: 429,
  upstream_auth_failed: 502,
  unavailable: 503,
  internal: 500,
};

export interface HttpError {
  status: number;
  body: { error: AppErrorCode; message: string; requestId: string; details?: Record<string, unknown> };
  /** True when the error must be logged with its cause (it is not the caller's fault). */
  log: boolean;
  /** Response headers the status needs (Retry-After on a 429). */
  headers?: Record<string, string>;
}

export function toHttp(err: unknown, requestId: string): HttpError {
  const appError = toAppError(err);
  const status = statusByCode[appError.code];
  if (!appError.expose) {
    return {
      status,
      body: { error: appError.code, message: genericMessage(status), requestId },
      log: true,
    };
  }
  return {
    status,
    body: {
      error: appError.code,
      message: appError.message,
      requestId,
      ...(appError.details ? { details: appError.details } : {}),
    },
    log: status >= 500,
    ...(appError instanceof RateLimitedError ? { headers: { 'Retry-After': String(appError.retryAfterSeconds) } } : {}),
  };
}

function genericMessage(status: number): string {
  if (status === 502) return 'An upstream service failed. Try again, or reconnect the service.';
  if (status === 503) return 'The service is not ready. Try again shortly.';
  return 'Internal error.';
}
