import type { IncomingHttpHeaders } from 'node:http';
import {
  headerMismatch,
  invalidMeta,
  invalidRequest,
  McpProtocolError,
  methodNotFound,
  unsupportedProtocolVersion,
} from './toMcp.js';
import {
  LEGACY_VERSION,
  META_CLIENT_CAPABILITIES,
  META_PROTOCOL_VERSION,
  MODERN_VERSION,
  SUPPORTED_VERSIONS,
  type ClientCapabilities,
  type RequestId,
} from './protocol.js';

export type Envelope =
  | { kind: 'notification'; method: string }
  | {
      kind: 'request';
      id: RequestId;
      method: string;
      params: Record<string, unknown>;
      capabilities: ClientCapabilities;
      version: string;
    };

/** A refusal of the ladder, which echoes the request's id once it has been read (JSON-RPC 2.0 §5). */
export class EnvelopeError extends McpProtocolError {
  readonly id: RequestId | null;

  constructor(id: RequestId | null, error: McpProtocolError) {
    super(error.kind, error.message, error.data === undefined ? {} : { data: error.data });
    this.id = id;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
}

/**
 * The 2026-07-28 ladder (MCP 2026-07-28 basic/index.mdx §_meta, Streamable HTTP), in the order conformance
 * expects: JSON-RPC shape, notification, `initialize`, version header, `_meta`,
 * header/body agreement, supported version, Mcp-Method / Mcp-Name. Routing
 * (unknown method → -32601/404) and the capability gate come after, in the
 * dispatcher. Pure: no I/O, so it is cheap on the hot path and unit-testable.
 */
export function readEnvelope(message: unknown, headers: IncomingHttpHeaders): Envelope {
  if (Array.isArray(message))
    throw new EnvelopeError(
      null,
      invalidRequest('Batch requests are not supported: send one JSON-RPC message per POST'),
    );
  if (!isRecord(message)) throw new EnvelopeError(null, invalidRequest('The body must be a JSON-RPC request object'));
  const hasId = 'id' in message;
  if (hasId && !isRequestId(message['id']))
    throw new EnvelopeError(null, invalidRequest('id must be a string or an integer'));
  const id = hasId ? (message['id'] as RequestId) : null;
  if (message['jsonrpc'] !== '2.0') throw new EnvelopeError(id, invalidRequest('jsonrpc must be "2.0"'));
  if ('result' in message || 'error' in message)
    throw new EnvelopeError(id, invalidRequest('Clients send requests and notifications only, never responses'));
  const method = message['method'];
  if (typeof method !== 'string' || method.length === 0 || method.length > 256)
    throw new EnvelopeError(id, invalidRequest('method must be a non-empty string'));
  if (message['params'] !== undefined && !isRecord(message['params']))
    throw new EnvelopeError(id, invalidRequest('params must be an object'));
  if (id === null) return { kind: 'notification', method };

  if (method === 'initialize') {
    throw new EnvelopeError(
      id,
      methodNotFound(
        `initialize is not part of MCP ${MODERN_VERSION}: send per-request _meta, or initialize without it to start a ${LEGACY_VERSION} session`,
        { data: { supported: SUPPORTED_VERSIONS } },
      ),
    );
  }
  const headerVersion = single(headers['mcp-protocol-version']);
  if (headerVersion === undefined)
    throw new EnvelopeError(id, headerMismatch('The MCP-Protocol-Version header is required'));

  const params = (message['params'] ?? {}) as Record<string, unknown>;
  const meta = params['_meta'];
  if (!isRecord(meta)) throw new EnvelopeError(id, invalidMeta('params._meta is required'));
  const version = meta[META_PROTOCOL_VERSION];
  if (typeof version !== 'string')
    throw new EnvelopeError(id, invalidMeta(`params._meta["${META_PROTOCOL_VERSION}"] must be a string`));
  const capabilities = meta[META_CLIENT_CAPABILITIES];
  if (!isRecord(capabilities))
    throw new EnvelopeError(id, invalidMeta(`params._meta["${META_CLIENT_CAPABILITIES}"] must be an object`));
  if (headerVersion !== version) {
    throw new EnvelopeError(
      id,
      headerMismatch(
        `Header mismatch: MCP-Protocol-Version header value '${clip(headerVersion)}' does not match body value '${clip(version)}'`,
      ),
    );
  }
  // The per-request envelope is the modern wire only; 2025-11-25 is served through initialize and a session.
  if (version !== MODERN_VERSION) {
    throw new EnvelopeError(id, unsupportedProtocolVersion(version));
  }
  checkHeader(id, 'Mcp-Method', headers['mcp-method'], method);
  const name = params['name'] ?? params['uri'];
  if (typeof name === 'string') checkHeader(id, 'Mcp-Name', headers['mcp-name'], name);
  return { kind: 'request', id, method, params, capabilities: capabilities as ClientCapabilities, version };
}

// The standard headers are required and must agree with the body; values may be sent as =?base64?…?= (MCP 2026-07-28 Streamable HTTP, Server Validation).
function checkHeader(id: RequestId, name: string, raw: string | string[] | undefined, expected: string): void {
  const value = single(raw);
  if (value === undefined)
    throw new EnvelopeError(id, headerMismatch(`The ${name} header is required (it must be '${clip(expected)}')`));
  const decoded = decodeHeaderValue(value);
  if (decoded !== expected) {
    throw new EnvelopeError(
      id,
      headerMismatch(
        `Header mismatch: ${name} header value '${clip(decoded ?? value)}' does not match body value '${clip(expected)}'`,
      ),
    );
  }
}

function decodeHeaderValue(value: string): string | undefined {
  const match = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/.exec(value);
  if (!match) return value;
  return Buffer.from(match[1] ?? '', 'base64').toString('utf8');
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}
