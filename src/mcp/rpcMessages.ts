import type { McpProtocolError } from './toMcp.js';
import type { RequestId } from './protocol.js';

// The JSON-RPC 2.0 messages the broker writes (both eras), as JSON text, and
// the SSE frame that carries one. The only place that spells the envelope.

/** A result response; `resultJson` is already JSON (the modern path serialises a result once). */
export function resultMessage(id: RequestId, resultJson: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}`;
}

/** An error response; `id` is null when the request's id could not be read (JSON-RPC 2.0 §5). */
export function errorMessage(id: RequestId | null, err: McpProtocolError): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: errorMember(err) });
}

/** The `error` member of a response: `data` only when there is some. */
export function errorMember(err: McpProtocolError): { code: number; message: string; data?: unknown } {
  return err.data === undefined
    ? { code: err.code, message: err.message }
    : { code: err.code, message: err.message, data: err.data };
}

/** A request from the server (2025-11-25 sessions only: the modern wire has none). */
export function requestMessage(id: RequestId, method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

export function notificationMessage(method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', method, params });
}

/**
 * One message as an SSE event (WHATWG HTML §9.2 "server-sent events"): JSON
 * text has no raw line breaks, so one `data:` line carries it whole.
 */
export function sseMessage(json: string): string {
  return `event: message\ndata: ${json}\n\n`;
}
