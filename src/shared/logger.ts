import { isSpanContextValid, trace } from '@opentelemetry/api';
import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

// Keys whose values are secrets wherever they appear in a log object. pino's
// redaction needs explicit paths, so each key is listed at the depths we log.
const SECRET_KEYS = [
  'authorization',
  'cookie',
  'set-cookie',
  'password',
  'secret',
  'client_secret',
  'clientSecret',
  'token',
  'access_token',
  'accessToken',
  'refresh_token',
  'refreshToken',
  'id_token',
  'idToken',
  'authorization_code',
  'authorizationCode',
  'code_verifier',
  'codeVerifier',
  'state',
  'nonce',
  'key',
  'keys',
];

// `code` is an OAuth authorization code (RFC 6749 §4.1.2) only where it comes
// from a request: a query, form or parsed callback parameters. Elsewhere it is
// an error's code (SQLSTATE, errno) or a JSON-RPC error code, which a log needs.
const OAUTH_CODE_CONTAINERS = ['query', 'body', 'params', 'searchParams', 'callbackParams'];

const atEveryDepth = (path: string): string[] => [path, `*.${path}`, `*.*.${path}`, `*.*.*.${path}`];

export const redactPaths: string[] = [
  ...SECRET_KEYS.flatMap((k) =>
    /^[A-Za-z_]\w*$/.test(k) ? atEveryDepth(k) : [`["${k}"]`, `*["${k}"]`, `*.*["${k}"]`, `*.*.*["${k}"]`],
  ),
  ...OAUTH_CODE_CONTAINERS.flatMap((container) => atEveryDepth(`${container}.code`)),
];

// Database errors name row values in `detail` ("Key (title)=(…) already exists") and `where`: personal data stays out.
const UNLOGGED_ERROR_FIELDS = ['detail', 'where'];

function serializeError(err: unknown): Record<string, unknown> {
  const serialized: Record<string, unknown> = { ...pino.stdSerializers.err(err as Error) };
  for (const field of UNLOGGED_ERROR_FIELDS) delete serialized[field];
  return serialized;
}

// A line written inside a span names its trace and span (OpenTelemetry's log correlation fields), so
// it leads to them; with tracing off no span is ever active and lines stay as they were.
function traceFields(): object {
  const spanContext = trace.getActiveSpan()?.spanContext();
  return spanContext && isSpanContextValid(spanContext)
    ? { trace_id: spanContext.traceId, span_id: spanContext.spanId }
    : {}; // a new object: pino merges the line's own fields into it
}

export interface LoggerConfig {
  level: string;
  name?: string;
}

/** The one logger factory. Secrets are censored by key at every logged depth. */
export function createLogger(config: LoggerConfig, destination?: pino.DestinationStream): Logger {
  const options: LoggerOptions = {
    level: config.level,
    name: config.name ?? 'connect-broker',
    redact: { paths: redactPaths, censor: '[redacted]' },
    serializers: { err: serializeError },
    base: { pid: process.pid },
    mixin: traceFields,
  };
  return destination ? pino(options, destination) : pino(options);
}
