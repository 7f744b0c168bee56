import { STATUS_CODES } from 'node:http';
import { AppError, toAppError, type AppErrorCode } from './appError.js';

// The ONLY mapping from errors to HTTP: one table of AppError codes to statuses.
const statusByCode: Record<AppErrorCode, number> = {
  invalid_input: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  invalid_transition: 409,
  conflict: 409,
  payload_too_large: 413,
  rate_limited: 429,
  upstream_auth_failed: 502,
  unavailable: 503,
  internal: 500,
};

// Errors from the HTTP stack (express, router, body-parser, raw-body, send) carry
// an http-errors style `status` and describe the request, not a fault of ours.
// Their messages can quote the request (a path segment, a parameter), so the
// caller gets a fixed text for the status instead.
const codeByStatus: Partial<Record<number, AppErrorCode>> = {
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
};
const messageByStatus: Partial<Record<number, string>> = {
  400: 'The request is malformed.',
  404: 'There is no page here.',
  413: 'The request body is too large.',
};

export interface HttpError {
  status: number;
  body: { error: AppErrorCode; message: string; requestId: string; details?: Record<string, unknown> };
  /** True when the error must be logged with its cause (it is not the caller's fault). */
  log: boolean;
  /** Response headers the status needs (Retry-After on a 429, or on a 503 that knows when to come back). */
  headers?: Record<string, string>;
}

export function toHttp(err: unknown, requestId: string): HttpError {
  const clientStatus = err instanceof AppError ? undefined : clientErrorStatus(err);
  if (clientStatus !== undefined) {
    const message = messageByStatus[clientStatus] ?? `${STATUS_CODES[clientStatus] ?? 'Bad request'}.`;
    return {
      status: clientStatus,
      body: { error: codeByStatus[clientStatus] ?? 'invalid_input', message, requestId },
      log: false,
    };
  }
  const appError = toAppError(err);
  const status = statusByCode[appError.code];
  const retryAfter =
    appError.retryAfterSeconds === undefined ? {} : { headers: { 'Retry-After': String(appError.retryAfterSeconds) } };
  if (!appError.expose) {
    return {
      status,
      body: { error: appError.code, message: genericMessage(status), requestId },
      log: true,
      ...retryAfter,
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
    ...retryAfter,
  };
}

/**
 * The 4xx status of an http-errors style error, which sets `status` and
 * `statusCode` together (router sets both on a URIError too). One without the
 * pair, such as an upstream response's `status` on an OAuth library error, is
 * not about this request and stays internal; so does every 5xx.
 */
function clientErrorStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { status, statusCode } = err as { status?: unknown; statusCode?: unknown };
  return typeof status === 'number' &&
    status === statusCode &&
    Number.isInteger(status) &&
    status >= 400 &&
    status < 500
    ? status
    : undefined;
}

function genericMessage(status: number): string {
  if (status === 502) return 'An upstream service failed. Try again, or reconnect the service.';
  if (status === 503) return 'The service is not ready. Try again shortly.';
  return 'Internal error.';
}
