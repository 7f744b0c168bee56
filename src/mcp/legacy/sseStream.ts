import type { ServerResponse } from 'node:http';

export interface SseOptions {
  sessionId: string;
  heartbeatMs: number;
  /** Ends the stream after this long (absent: it lives as long as its exchange). */
  maxLifetimeMs?: number;
  /** Ends the stream when this aborts (the session ended). */
  closing: AbortSignal;
  /** Runs before the stream is ended by `closing` (a last event for the client). */
  onClosing?: () => void;
}

/**
 * Starts an SSE response: a comment line every `heartbeatMs` (WHATWG HTML
 * §9.2 "server-sent events": lines starting with a colon are ignored by
 * clients) keeps intermediaries from cutting an idle stream and shows a
 * vanished client as a failed write; the timers stop when the stream closes.
 */
export function openSse(res: ServerResponse, options: SseOptions): void {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-store',
    'X-Accel-Buffering': 'no',
    'Mcp-Session-Id': options.sessionId,
  });
  const heartbeat = setInterval(() => res.writableEnded || res.write(': heartbeat\n\n'), options.heartbeatMs);
  heartbeat.unref();
  const lifetime = options.maxLifetimeMs === undefined ? undefined : setTimeout(() => res.end(), options.maxLifetimeMs);
  lifetime?.unref();
  const onClosing = () => {
    if (res.writableEnded) return;
    options.onClosing?.();
    res.end();
  };
  if (options.closing.aborted) onClosing();
  else options.closing.addEventListener('abort', onClosing, { once: true });
  res.on('close', () => {
    clearInterval(heartbeat);
    clearTimeout(lifetime);
    options.closing.removeEventListener('abort', onClosing);
  });
}
