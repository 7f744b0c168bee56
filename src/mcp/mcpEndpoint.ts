import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../errors/appError.js';
import {
  endpointFailed,
  forbidden,
  httpMethodNotAllowed,
  invalidRequest,
  McpProtocolError,
  notAcceptable,
  outageOf,
  parseError,
  payloadTooLarge,
  unavailable,
  unsupportedMediaType,
} from './toMcp.js';
import type { Logger } from '../shared/logger.js';
import { mustCloseConnection, readBody } from '../web/requestBody.js';
import { EnvelopeError, readEnvelope } from './envelope.js';
import type { BearerVerifier, VerifiedBearer } from './mcpAuth.js';
import type { ModernServer } from './mcpServer.js';
import { isLegacyMessage, type LegacyEndpoint } from './legacy/legacyEndpoint.js';
import type { RequestId } from './protocol.js';
import { errorMessage, resultMessage, sseMessage } from './rpcMessages.js';
import { ERA_LEGACY, ERA_MODERN, mcpRequestSpan, type McpRequestSpan } from '../telemetry/mcpRequestSpan.js';

export interface McpEndpointDeps {
  server: ModernServer;
  /** The 2025-11-25 adapter (initialize + sessions); its traffic never reaches the modern server. */
  legacy: LegacyEndpoint;
  verifyBearer: BearerVerifier;
  /** Host header values this server answers to (DNS-rebinding protection). */
  allowedHosts: ReadonlySet<string>;
  /** Origin header values allowed when one is sent. */
  allowedOrigins: ReadonlySet<string>;
  /** For the WWW-Authenticate challenge (RFC 9728). */
  resourceMetadataUrl: string;
  /** The scope the challenge tells hosts to ask for (MCP_ADVERTISED_SCOPE), or none. */
  requiredScope: string | undefined;
  logger: Logger;
  /** The client's address for log lines (shared/clientAddress.ts, TRUST_PROXY), asked only when one is written. */
  addressOf: (req: IncomingMessage) => string;
}

const MAX_BODY_BYTES = 1024 * 1024;

/**
 * POST /mcp, 2026-07-28 Streamable HTTP, stateless. All HTTP concerns live
 * here: Host/Origin, method, bearer authentication, media types, body size,
 * JSON or SSE; the ladder is readEnvelope(), the methods are the ModernServer.
 * It runs on plain node:http, not Express, because it is the hot path.
 */
export function createMcpEndpoint(deps: McpEndpointDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const requestId = randomUUID();
    res.setHeader('X-Request-Id', requestId);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // One span per request (telemetry/mcpRequestSpan.ts); a no-op with tracing off.
    const span = mcpRequestSpan(req);
    handle(deps, req, res, requestId, span)
      .catch((err: unknown) => {
        deps.logger.error({ err, requestId, clientAddress: deps.addressOf(req) }, 'MCP endpoint failed');
        if (!res.headersSent) sendError(res, null, outageOf(err) ?? endpointFailed('Internal error'));
        else res.destroy();
      })
      .finally(() => span.end(res.statusCode));
  };
}

async function handle(
  deps: McpEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  span: McpRequestSpan,
): Promise<void> {
  if (!deps.allowedHosts.has(req.headers.host ?? ''))
    return sendError(res, null, forbidden('Forbidden: this Host is not served here'));
  const origin = req.headers.origin;
  if (origin !== undefined && !deps.allowedOrigins.has(origin))
    return sendError(res, null, forbidden('Forbidden: Origin not allowed'));
  if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
    res.setHeader('Allow', 'POST, GET, DELETE');
    return sendError(res, null, httpMethodNotAllowed('Method not allowed'));
  }

  let caller: VerifiedBearer;
  try {
    caller = await deps.verifyBearer(req.headers.authorization);
  } catch (err) {
    if (err instanceof AppError && (err.code === 'unauthenticated' || err.code === 'forbidden'))
      return challenge(deps, res, err);
    // The issuer's keys cannot be had: no token can be checked, which is not the caller's fault.
    if (err instanceof AppError && err.code === 'unavailable') {
      deps.logger.error({ err, requestId, clientAddress: deps.addressOf(req) }, 'MCP bearer tokens cannot be verified');
      return sendError(
        res,
        null,
        unavailable('The authorization server cannot be reached to verify the access token. Try again later.', {
          retryAfterSeconds: 30,
        }),
      );
    }
    throw err;
  }
  // GET (the standalone stream) and DELETE (end a session) exist only for 2025-11-25 sessions.
  if (req.method === 'GET') return deps.legacy.get(req, res, caller);
  if (req.method === 'DELETE') return deps.legacy.delete(req, res, caller);

  const contentType = req.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(contentType))
    return sendError(res, null, unsupportedMediaType('Content-Type must be application/json'));
  const accept = req.headers.accept ?? '*/*';
  const wantsJson = /application\/json|\*\/\*|application\/\*/i.test(accept);
  const wantsSse = /text\/event-stream/i.test(accept);
  if (!wantsJson && !wantsSse)
    return sendError(res, null, notAcceptable('Accept must include application/json or text/event-stream'));

  let body: string;
  try {
    body = await readBody(req, MAX_BODY_BYTES);
  } catch (err) {
    // raw-body's own http-errors: 413 over the limit, 400 for a body shorter than its Content-Length.
    const status = (err as { status?: unknown }).status;
    if (status === 413) return sendError(res, null, payloadTooLarge(`The body exceeds ${MAX_BODY_BYTES} bytes`));
    if (status === 400) return sendError(res, null, invalidRequest('The body could not be read'));
    throw err;
  }
  let message: unknown;
  try {
    message = JSON.parse(body);
  } catch {
    return sendError(res, null, parseError('Parse error: the body is not valid JSON'));
  }

  const parsed = message;
  // The rest in the request's span, begun now that its `_meta` can name its parent.
  if (isLegacyMessage(parsed, req.headers))
    return span.within(parsed, ERA_LEGACY, () => deps.legacy.post(req, res, parsed, caller, requestId));
  return span.within(parsed, ERA_MODERN, () =>
    answerModern(deps, req, res, parsed, caller, requestId, { wantsJson, wantsSse }, span),
  );
}

async function answerModern(
  deps: McpEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  message: unknown,
  caller: VerifiedBearer,
  requestId: string,
  { wantsJson, wantsSse }: { wantsJson: boolean; wantsSse: boolean },
  span: McpRequestSpan,
): Promise<void> {
  let id: RequestId | null = null;
  try {
    const envelope = readEnvelope(message, req.headers);
    if (envelope.kind === 'notification') {
      res.writeHead(202).end();
      return;
    }
    id = envelope.id;
    const result = await deps.server.handle(envelope, caller, requestId);
    const text = resultMessage(id, result);
    if (wantsSse && !wantsJson) return sendSse(res, text);
    return sendRaw(res, 200, text);
  } catch (err) {
    if (!(err instanceof McpProtocolError)) throw err;
    const errorId = err instanceof EnvelopeError ? err.id : id;
    span.outcome('rpc_error', { 'rpc.jsonrpc.error_code': err.code });
    deps.logger.info(
      { requestId, rpcCode: err.code, message: err.message, clientAddress: deps.addressOf(req) },
      'MCP request refused',
    );
    if (wantsSse && !wantsJson && err.httpStatus === 200) return sendSse(res, errorMessage(errorId, err));
    return sendError(res, errorId, err);
  }
}

function challenge(deps: McpEndpointDeps, res: ServerResponse, err: AppError): void {
  const scope = deps.requiredScope ? `, scope="${deps.requiredScope}"` : '';
  if (err.code === 'forbidden') {
    res.setHeader(
      'WWW-Authenticate',
      `Bearer error="insufficient_scope"${scope}, resource_metadata="${deps.resourceMetadataUrl}"`,
    );
    return sendRaw(res, 403, JSON.stringify({ error: 'insufficient_scope', error_description: err.message }));
  }
  res.setHeader('WWW-Authenticate', `Bearer resource_metadata="${deps.resourceMetadataUrl}"${scope}`);
  return sendRaw(res, 401, JSON.stringify({ error: 'invalid_token', error_description: err.message }));
}

// The status is the error's own (mcp/toMcp.ts), and so is Retry-After when it knows one.
function sendError(res: ServerResponse, id: RequestId | null, err: McpProtocolError): void {
  if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  sendRaw(res, err.httpStatus, errorMessage(id, err));
}

function sendRaw(res: ServerResponse, status: number, text: string): void {
  // A body cut off at the limit, or a large one a refusal left unread, closes the connection rather than being drained.
  if (mustCloseConnection(res.req)) res.setHeader('Connection', 'close');
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
}

// A per-request SSE stream carrying just the final response, which ends it (MCP 2026-07-28 Streamable HTTP).
function sendSse(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'X-Accel-Buffering': 'no' }).end(sseMessage(text));
}
