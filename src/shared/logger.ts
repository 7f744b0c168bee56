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
  'code',
  'code_verifier',
  'codeVerifier',
  'state',
  'nonce',
  'key',
  'keys',
];

export const redactPaths: string[] = SECRET_KEYS.flatMap((k) => {
  const key = /^[A-Za-z_]\w*$/.test(k) ? `.${k}` : `["${k}"]`;
  return [key.slice(key.startsWith('.') ? 1 : 0), `*${key}`, `*.*${key}`, `*.*.*${key}`];
});

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
    // `code` is redacted (OAuth authorization codes); an error's own code (SQLSTATE, errno) is kept as errorCode.
    serializers: { err: (err: unknown) => ({ ...pino.stdSerializers.err(err as Error), errorCode: typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : undefined }) },
    base: { pid: process.pid },
  };
  return destination ? pino(options, destination) : pino(options);
}
