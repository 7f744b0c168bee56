import { SUPPORTED_VERSIONS, type ClientCapabilities } from './protocol.js';
import { DatabaseUnavailableError, toAppError, type AppErrorCode } from '../errors/appError.js';

// The ONLY mapping from errors to MCP, as one table: each
// protocol error the broker sends, its JSON-RPC code and the HTTP status it
// travels with when it is the whole answer to a POST /mcp. Errors a method
// raises stay in-band on 200, as the MCP TypeScript SDK answers them; the
// ladder's and the transport's refusals carry the status the 2026-07-28
// Streamable HTTP transport names. On a 2025-11-25 session an error that
// answers a call travels in that call's response (200, or its SSE stream)
// whatever its row says; only the session's own refusals use the status.
export const rpcErrors = {
  // JSON-RPC 2.0 §5.1
  parseError: { code: -32700, httpStatus: 400 },
  invalidRequest: { code: -32600, httpStatus: 400 },
  methodNotFound: { code: -32601, httpStatus: 404 },
  invalidParams: { code: -32602, httpStatus: 200 },
  internalError: { code: -32603, httpStatus: 200 },
  // Refusals of the transport, before any method runs: the body says why in JSON-RPC terms.
  forbidden: { code: -32600, httpStatus: 403 },
  unknownSession: { code: -32600, httpStatus: 404 },
  httpMethodNotAllowed: { code: -32600, httpStatus: 405 },
  notAcceptable: { code: -32600, httpStatus: 406 },
  payloadTooLarge: { code: -32600, httpStatus: 413 },
  unsupportedMediaType: { code: -32600, httpStatus: 415 },
  tooManySessions: { code: -32600, httpStatus: 429 },
  endpointFailed: { code: -32603, httpStatus: 500 },
  unavailable: { code: -32603, httpStatus: 503 },
  // A request missing a required _meta field is malformed (MCP 2026-07-28 basic/index.mdx, §_meta).
  invalidMeta: { code: -32602, httpStatus: 400 },
  // MCP 2026-07-28 basic/index.mdx, §Error Codes
  headerMismatch: { code: -32020, httpStatus: 400 },
  missingRequiredClientCapability: { code: -32021, httpStatus: 400 },
  unsupportedProtocolVersion: { code: -32022, httpStatus: 400 },
  // 2025-11-25 only: never on the modern wire.
  sessionEnded: { code: -32000, httpStatus: 200 },
  urlElicitationRequired: { code: -32042, httpStatus: 200 },
} as const satisfies Record<string, { code: number; httpStatus: number }>;

export type RpcErrorKind = keyof typeof rpcErrors;

interface RpcErrorOptions {
  data?: unknown;
  cause?: unknown;
  /** Sent as Retry-After when the error is the whole answer (RFC 9110 §10.2.3). */
  retryAfterSeconds?: number;
}

/** A JSON-RPC error the endpoint answers with; build it with the constructors below. */
export class McpProtocolError extends Error {
  override name = 'McpProtocolError';
  readonly kind: RpcErrorKind;
  readonly code: number;
  readonly httpStatus: number;
  readonly data: unknown;
  readonly retryAfterSeconds: number | undefined;

  constructor(kind: RpcErrorKind, message: string, options: RpcErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.code = rpcErrors[kind].code;
    this.httpStatus = rpcErrors[kind].httpStatus;
    this.data = options.data;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

const named =
  (kind: RpcErrorKind) =>
  (message: string, options?: RpcErrorOptions): McpProtocolError =>
    new McpProtocolError(kind, message, options);

export const parseError = named('parseError');
export const invalidRequest = named('invalidRequest');
export const methodNotFound = named('methodNotFound');
export const invalidParams = named('invalidParams');
export const internalError = named('internalError');
export const forbidden = named('forbidden');
export const unknownSession = named('unknownSession');
export const httpMethodNotAllowed = named('httpMethodNotAllowed');
export const notAcceptable = named('notAcceptable');
export const payloadTooLarge = named('payloadTooLarge');
export const unsupportedMediaType = named('unsupportedMediaType');
export const tooManySessions = named('tooManySessions');
export const endpointFailed = named('endpointFailed');
export const unavailable = named('unavailable');
export const invalidMeta = named('invalidMeta');
export const headerMismatch = named('headerMismatch');
export const sessionEnded = named('sessionEnded');

/** -32021: `data.requiredCapabilities` is a ClientCapabilities object, not a list. */
export function missingRequiredClientCapability(
  message: string,
  requiredCapabilities: ClientCapabilities,
): McpProtocolError {
  return new McpProtocolError('missingRequiredClientCapability', message, { data: { requiredCapabilities } });
}

/** -32022 names what we speak and echoes what was asked for. */
export function unsupportedProtocolVersion(requested: string): McpProtocolError {
  return new McpProtocolError('unsupportedProtocolVersion', 'Unsupported protocol version', {
    data: { supported: SUPPORTED_VERSIONS, requested },
  });
}

/** 2025-11-25 URL elicitation in URL mode, each with its elicitationId. */
export interface LegacyUrlElicitation {
  mode: 'url';
  elicitationId: string;
  url: string;
  message: string;
}

/** -32042 (2025-11-25 only): the host opens the links, and may retry the call after completion. */
export function urlElicitationRequired(data: { elicitations: LegacyUrlElicitation[] }): McpProtocolError {
  return new McpProtocolError(
    'urlElicitationRequired',
    'This request requires connecting an account. Open the link, then retry the call.',
    { data },
  );
}

/**
 * Inside tools/call an AppError becomes what the model reads in an `isError`
 * result: its own message when exposed, else "Internal error", which the
 * caller logs.
 */
export function toToolError(err: unknown): {
  text: string;
  structured: { error: AppErrorCode; message: string };
  log: boolean;
  code: AppErrorCode;
} {
  const appError = toAppError(err);
  const text = appError.expose ? appError.message : 'Internal error. Try again later.';
  return { text, structured: { error: appError.code, message: text }, log: !appError.expose, code: appError.code };
}

/**
 * The broker's own outage (its database cannot be reached) is no tool's failure and no fault of the
 * request: the whole POST is answered 503 with Retry-After and -32603 naming it, so the host backs
 * off and sends the same request again, rather than the model reading a tool error. Undefined for
 * every other error.
 */
export function outageOf(err: unknown): McpProtocolError | undefined {
  const appError = toAppError(err);
  if (!(appError instanceof DatabaseUnavailableError)) return undefined;
  const { retryAfterSeconds } = appError;
  return unavailable(appError.message, {
    cause: err,
    retryAfterSeconds,
    data: { retryAfterSeconds },
  });
}

/** Outside a tool: protocol errors pass as they are; an outage is 503; everything else is -32603, never -32700/-32602. */
export function toJsonRpcError(err: unknown): McpProtocolError {
  if (err instanceof McpProtocolError) return err;
  return outageOf(err) ?? internalError('Internal error', { cause: err });
}
