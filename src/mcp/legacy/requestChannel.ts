import type { ServerResponse } from 'node:http';
import type { LegacySession } from './legacySessions.js';

/**
 * The SSE stream of one legacy POST: the server may send requests and
 * notifications related to this request before the final response
 * (2025-11-25 Streamable HTTP). The stream opens on the first message; a
 * request that never needs one is answered as plain JSON.
 */
export interface RequestChannel {
  /** Sends elicitation/create (or another request) and waits for the client's response; undefined on timeout or close. */
  ask(method: string, params: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown> | undefined>;
  notify(method: string, params: Record<string, unknown>): void;
  /** Sends the final response and ends the exchange. */
  finish(payload: Record<string, unknown>, status?: number): void;
  readonly closed: boolean;
}

export function createRequestChannel(res: ServerResponse, session: LegacySession): RequestChannel {
  let streaming = false;
  let closed = false;
  res.on('close', () => {
    closed = true;
  });
  const send = (message: Record<string, unknown>) => {
    if (!streaming) {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'X-Accel-Buffering': 'no', 'Mcp-Session-Id': session.id });
      streaming = true;
    }
    res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  };
  return {
    get closed() {
      return closed;
    },
    ask(method, params, timeoutMs) {
      const id = `srv-${session.nextRequestId++}`;
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          session.pending.delete(id);
          resolve(undefined);
        }, timeoutMs);
        const onClose = () => {
          clearTimeout(timer);
          session.pending.delete(id);
          resolve(undefined);
        };
        res.once('close', onClose);
        session.pending.set(id, (message) => {
          clearTimeout(timer);
          res.off('close', onClose);
          session.pending.delete(id);
          resolve(message);
        });
        send({ jsonrpc: '2.0', id, method, params });
      });
    },
    notify(method, params) {
      if (!closed) send({ jsonrpc: '2.0', method, params });
    },
    finish(payload, status = 200) {
      if (closed) return;
      if (streaming) {
        res.end(`event: message\ndata: ${JSON.stringify(payload)}\n\n`);
        return;
      }
      const text = JSON.stringify(payload);
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'Mcp-Session-Id': session.id }).end(text);
    },
  };
}
