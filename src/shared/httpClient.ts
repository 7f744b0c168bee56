import { isIP } from 'node:net';
import { createSecureContext, rootCertificates } from 'node:tls';
import { Agent, buildConnector } from 'undici';
import type { EgressGuard } from './egressGuard.js';
import { readBoundedBody } from './boundedBody.js';

export type Fetch = typeof fetch;

/**
 * The fetch every server-to-server call uses. It verifies TLS against the
 * system roots plus any extra CA (the development CA under `.data/`); there
 * is no switch that turns verification off. It is the global fetch with a
 * dispatcher, so nock still sees every request in tests.
 */
export function createFetch(options: FetchOptions = {}): Fetch {
  const dispatcher = verifyingAgent(options);
  const timeoutMs = options.timeoutMs ?? 10_000;
  return ((input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) =>
    fetch(input, {
      ...init,
      // Our deadline holds even when the caller brings its own signal (openid-client always does, at 30 s).
      signal: init?.signal
        ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)])
        : AbortSignal.timeout(timeoutMs),
      // undici's dispatcher option is not in the DOM RequestInit type
      ...({ dispatcher } as object),
    })) as Fetch;
}

export interface FetchOptions {
  extraCaPems?: readonly string[];
  timeoutMs?: number;
  /**
   * The broker's egress to parties others chose (main.ts passes one): every connection's address is
   * judged (egressGuard.ts). The CLI's and the tests' own clients of the broker pass none.
   */
  egress?: EgressGuard;
}

/** The undici Agent createFetch and createRequestFetch (requestFetch.ts) dispatch on: verified TLS, the deadline as its timeouts. */
export function verifyingAgent(options: FetchOptions): Agent {
  // One TLS context for every connection: building it from the ~140 system roots costs tens of
  // milliseconds of CPU, which undici would otherwise pay again on each new connection.
  const secureContext = createSecureContext({ ca: [...rootCertificates, ...(options.extraCaPems ?? [])] });
  const egress = options.egress;
  return new Agent({
    connect: egress
      ? guardedConnector(egress, buildConnector({ secureContext, rejectUnauthorized: true, lookup: egress.lookup }))
      : { secureContext, rejectUnauthorized: true },
    headersTimeout: options.timeoutMs ?? 10_000,
    bodyTimeout: options.timeoutMs ?? 10_000,
  });
}

/**
 * The connector undici calls once per new connection (it pools them): a name is judged by the
 * guard's lookup, whose answer the socket connects to; an IP literal, which net never looks up, is
 * judged here.
 */
function guardedConnector(egress: EgressGuard, connect: buildConnector.connector): buildConnector.connector {
  return (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    const refused = isIP(host) === 0 ? undefined : egress.refusal(host, host);
    if (refused) return callback(refused, null);
    return connect(options, callback);
  };
}

export class FetchRefusedError extends Error {
  override name = 'FetchRefusedError';
}

/**
 * Wraps a fetch for documents the broker trusts (discovery metadata, key
 * sets): a redirect is refused rather than followed, so the document comes
 * from the URL that was checked, and a body over `maxBytes` is refused
 * before it is parsed. The answer is buffered; read it as usual. With `eventStream`, an answer of
 * type text/event-stream (MCP's Streamable HTTP, which may send requests before its answer and wait
 * for theirs) is passed on as it comes instead, each chunk given to `eventStream` on the way, and
 * fails once more than `maxBytes` have come.
 */
export function strictFetch(
  fetch: Fetch,
  options: { maxBytes: number; eventStream?: (chunk: Uint8Array) => void },
): Fetch {
  return (async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    const url = input instanceof Request ? input.url : String(input);
    const response = await fetch(input, { ...init, redirect: 'manual' });
    const refuse = async (why: string): Promise<never> => {
      await response.body?.cancel().catch(() => undefined);
      throw new FetchRefusedError(`${url} ${why}`);
    };
    if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400))
      return refuse(`answered a redirect (${response.status}), which is not followed`);
    const seen = options.eventStream;
    if (seen && response.body && /^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '')) {
      let size = 0;
      const body = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            size += chunk.byteLength;
            if (size > options.maxBytes)
              return controller.error(new FetchRefusedError(`${url} answered more than ${options.maxBytes} bytes`));
            seen(chunk);
            controller.enqueue(chunk);
          },
        }),
      );
      return new Response(body, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    }
    const body = await readBoundedBody(response, options.maxBytes);
    if (body === undefined) throw new FetchRefusedError(`${url} answered more than ${options.maxBytes} bytes`);
    // fetch has already decoded the body, so its encoding and length no longer describe it.
    const headers = new Headers(response.headers);
    headers.delete('content-encoding');
    headers.delete('content-length');
    return new Response(response.body ? body : null, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }) as Fetch;
}
