import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { request } from 'undici';
import { FetchRefusedError, verifyingAgent, type Fetch, type FetchOptions } from './httpClient.js';

/**
 * createFetch's TLS and deadline on undici's `request` (requestFetch below): for the upstream MCP
 * servers' calls, one per proxied tool call, where fetch's own cost shows. It never follows a
 * redirect, and tests cannot intercept it with nock (they run real servers for upstreams).
 */
export function createRequestFetch(options: FetchOptions & { maxBytes?: number } = {}): RequestFetch {
  const dispatcher = verifyingAgent(options);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxBytes = options.maxBytes ?? MAX_BUFFERED_BYTES;
  return Object.assign(requestFetch(dispatcher, timeoutMs, maxBytes), {
    post: (async (url, headers, body, signal) => {
      const answer = await request(url, { method: 'POST', headers, body, signal, dispatcher });
      return {
        status: answer.statusCode,
        headers: answer.headers,
        text: async (within = maxBytes) =>
          (await bounded(answer.body, url, Math.min(within, maxBytes))).toString('utf8'),
        chunks: (within = maxBytes) => boundedChunks(answer.body, url, Math.min(within, maxBytes)),
        discard: () => answer.body.dump(),
      };
    }) satisfies Post,
  });
}

/**
 * One POST on the same connections and TLS as the fetch, none of fetch's Request, Headers and
 * Response built: the caller reads the answer whole or as it comes, bounded as the fetch's is.
 * For the one request on a hot path that needs nothing more (upstreamMcpClient.ts). The caller's
 * signal is its deadline (the agent's timeouts still hold).
 */
export type Post = (
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
) => Promise<PostAnswer>;

export interface PostAnswer {
  status: number;
  /** As undici gives them: lower-case names. */
  headers: Record<string, string | string[] | undefined>;
  /** The whole body as UTF-8 text; FetchRefusedError past the fetch's bound or `maxBytes`, the smaller. */
  text(maxBytes?: number): Promise<string>;
  /** The body as it comes; FetchRefusedError once more than that has come. */
  chunks(maxBytes?: number): AsyncIterable<Buffer>;
  /** Nothing more is read. */
  discard(): Promise<void>;
}

/** createRequestFetch's fetch, with its lighter POST beside it. */
export type RequestFetch = Fetch & { post: Post };

/**
 * A fetch on undici's `request` for the calls the broker makes on a hot path (an upstream MCP
 * server's tools/call). Node 20's fetch costs about five times the CPU of `request` for one small
 * JSON answer on a kept-alive connection (its WHATWG streams, Request and signal machinery), and the
 * broker makes one such call for every proxied tool call. It keeps what fetch's callers here rely
 * on: a Response (an event stream passed on as it comes, any other body buffered), no redirect ever
 * followed (a 3xx is the answer, as with `redirect: 'manual'`), the caller's signal, and failures
 * that name their cause (`code`) as fetch's `cause` does. Bodies are strings, bytes or
 * URLSearchParams: what the broker sends; anything else is refused before anything is sent. A
 * buffered answer over `maxBytes` is refused (FetchRefusedError) as it comes, never held whole; the
 * caller's own bound (strictFetch) may be smaller.
 */
export function requestFetch(dispatcher: Dispatcher, timeoutMs: number, maxBytes = MAX_BUFFERED_BYTES): Fetch {
  return (async (input: Parameters<Fetch>[0], init: Parameters<Fetch>[1] = {}) => {
    if (input instanceof Request) throw new TypeError('requestFetch takes a URL, not a Request');
    const headers = new Headers(init.headers);
    const body = bodyOf(init.body, headers);
    const signal = init.signal
      ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)])
      : AbortSignal.timeout(timeoutMs);
    const answer = await request(String(input), {
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: Object.fromEntries(headers),
      ...(body !== undefined && { body }),
      signal,
      dispatcher,
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (Array.isArray(value)) for (const v of value) responseHeaders.append(name, v);
      else if (value !== undefined) responseHeaders.set(name, value);
    }
    const status = answer.statusCode;
    // A Response cannot be built with these statuses' bodies, and they have none worth reading.
    const noBody = status === 204 || status === 304 || (init.method ?? 'GET') === 'HEAD';
    if (noBody) {
      await answer.body.dump();
      return new Response(null, { status, headers: responseHeaders });
    }
    if (/^text\/event-stream\b/i.test(responseHeaders.get('content-type') ?? ''))
      return new Response(Readable.toWeb(answer.body) as ReadableStream<Uint8Array>, {
        status,
        headers: responseHeaders,
      });
    return new Response(await bounded(answer.body, String(input), maxBytes), { status, headers: responseHeaders });
  }) as Fetch;
}

// What requestFetch holds of one answer at most, whatever its caller's bound.
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

async function bounded(body: Dispatcher.ResponseData['body'], url: string, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of boundedChunks(body, url, maxBytes)) {
    size += chunk.byteLength;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

async function* boundedChunks(
  body: Dispatcher.ResponseData['body'],
  url: string,
  maxBytes: number,
): AsyncGenerator<Buffer> {
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      body.destroy();
      throw new FetchRefusedError(`${url} answered more than ${maxBytes} bytes`);
    }
    yield chunk;
  }
}

function bodyOf(body: RequestInit['body'], headers: Headers): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (body instanceof URLSearchParams) {
    if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
    return body.toString();
  }
  throw new TypeError('requestFetch sends strings, bytes or URLSearchParams only');
}
