import type { ServerResponse } from 'node:http';
import { sessionEnded } from '../toMcp.js';
import type { RequestId } from '../protocol.js';
import { errorMessage, notificationMessage, requestMessage, sseMessage } from '../rpcMessages.js';
import type { LegacySession } from './legacySessions.js';
import { openSse } from './sseStream.js';

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
  /** Sends the final response (JSON text, rpcMessages.ts) and ends the exchange (once; later calls do nothing). */
  finish(json: string, status?: number): void;
  readonly closed: boolean;
}

// When the session ends under a call (DELETE, idle sweep, shutdown) the call is answered at once;
// whatever it was waiting for may still finish in the background, but it accepts nothing (session.ended).
const SESSION_ENDED =
  'The session ended (deleted, idle too long, or the server is stopping): initialize again, then call again.';

export function createRequestChannel(
  res: ServerResponse,
  session: LegacySession,
  id: RequestId,
  heartbeatMs: number,
): RequestChannel {
  let streaming = false;
  let closed = false;
  res.on('close', () => {
    closed = true;
  });
  const ended = () => errorMessage(id, sessionEnded(SESSION_ENDED));
  const send = (json: string) => {
    if (res.writableEnded) return;
    if (!streaming) {
      // The stream's own closing handler answers for the session's end from here on.
      openSse(res, {
        sessionId: session.id,
        heartbeatMs,
        closing: session.closing,
        onClosing: () => res.write(sseMessage(ended())),
      });
      streaming = true;
    }
    res.write(sseMessage(json));
  };
  const finish = (json: string, status = 200) => {
    if (closed || res.writableEnded) return;
    if (streaming) {
      res.end(sseMessage(json));
      return;
    }
    res
      .writeHead(status, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(json),
        'Mcp-Session-Id': session.id,
      })
      .end(json);
  };
  const onSessionEnd = () => {
    if (!streaming) finish(ended());
  };
  session.closing.addEventListener('abort', onSessionEnd, { once: true });
  res.on('close', () => session.closing.removeEventListener('abort', onSessionEnd));
  return {
    get closed() {
      return closed;
    },
    ask(method, params, timeoutMs) {
      const requestId = `srv-${session.nextRequestId++}`;
      return new Promise((resolve) => {
        if (closed || res.writableEnded) return resolve(undefined);
        const timer = setTimeout(() => {
          session.pending.delete(requestId);
          resolve(undefined);
        }, timeoutMs);
        const onClose = () => {
          clearTimeout(timer);
          session.pending.delete(requestId);
          resolve(undefined);
        };
        res.once('close', onClose);
        session.pending.set(requestId, (message) => {
          clearTimeout(timer);
          res.off('close', onClose);
          session.pending.delete(requestId);
          resolve(message);
        });
        send(requestMessage(requestId, method, params));
      });
    },
    notify(method, params) {
      if (!closed && !res.writableEnded) send(notificationMessage(method, params));
    },
    finish,
  };
}
