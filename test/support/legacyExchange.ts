import type { IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { BrokerStack } from './brokerStack.js';

// A raw HTTPS exchange with /mcp that reads a response as it streams (JSON or SSE), for the
// 2025-11-25 tests: a nested call's stream stays open until the client has answered on it.

export type JsonRpc = {
  jsonrpc?: string;
  id?: unknown;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
};

export interface Exchange {
  status: number;
  headers: IncomingHttpHeaders;
  /** Every JSON-RPC message received so far (one for a JSON body, each `data:` of an SSE body). */
  messages: JsonRpc[];
  text: () => string;
  ended: Promise<void>;
  /** The first message (already received or still to come) that `match` accepts. */
  next(match: (m: JsonRpc) => boolean, timeoutMs?: number): Promise<JsonRpc>;
  close(): void;
}

/** One HTTP exchange with /mcp on node:https, read as it streams. */
export function exchange(
  stack: BrokerStack,
  method: 'GET' | 'POST' | 'DELETE',
  headers: Record<string, string>,
  body?: unknown,
  baseUrl = stack.brokerUrl,
): Promise<Exchange> {
  const url = new URL('/mcp', baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method,
        ca: stack.tls.caPem,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (res) => {
        let raw = '';
        let parsedUpTo = 0;
        const messages: JsonRpc[] = [];
        const waiters = new Set<() => void>();
        const sse = /text\/event-stream/.test(res.headers['content-type'] ?? '');
        const parse = (final: boolean) => {
          if (!sse) {
            if (final && raw) messages.push(JSON.parse(raw) as JsonRpc);
            return;
          }
          const events = raw.slice(parsedUpTo).split('\n\n');
          const complete = events.slice(0, -1);
          for (const event of complete) {
            parsedUpTo += event.length + 2;
            const data = event
              .split('\n')
              .filter((l) => l.startsWith('data:'))
              .map((l) => l.slice(5).trimStart())
              .join('\n');
            if (data) messages.push(JSON.parse(data) as JsonRpc);
          }
        };
        const wake = () => [...waiters].forEach((w) => w());
        let done = false;
        const ended = new Promise<void>((resolveEnd) => {
          res.on('data', (chunk: Buffer) => {
            raw += chunk.toString('utf8');
            parse(false);
            wake();
          });
          const finish = () => {
            if (done) return;
            done = true;
            parse(true);
            wake();
            resolveEnd();
          };
          res.on('end', finish);
          res.on('close', finish);
          res.on('error', finish);
        });
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          messages,
          text: () => raw,
          ended,
          next(match, timeoutMs = 5_000) {
            return new Promise((found, fail) => {
              const check = () => {
                const hit = messages.find(match);
                if (hit) {
                  waiters.delete(check);
                  clearTimeout(timer);
                  found(hit);
                } else if (done) {
                  waiters.delete(check);
                  clearTimeout(timer);
                  fail(new Error(`the exchange ended without the message; it had ${JSON.stringify(messages)}`));
                }
              };
              const timer = setTimeout(() => {
                waiters.delete(check);
                fail(new Error(`no such message within ${timeoutMs} ms; received ${JSON.stringify(messages)}`));
              }, timeoutMs);
              waiters.add(check);
              check();
            });
          },
          close: () => {
            req.destroy();
            res.destroy();
          },
        });
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));
  });
}
