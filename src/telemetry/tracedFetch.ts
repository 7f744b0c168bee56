import { context, propagation, SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import type { Fetch } from '../shared/httpClient.js';
import type { Post } from '../shared/requestFetch.js';
import { inSpan } from './spans.js';

export interface TracedCall {
  /** The span's name for a request (`oauth token_exchange`, `provider.api GET`): fixed words, never from the request's values. */
  name: (url: URL, init: RequestInit | undefined) => string;
  /** What the span records as the request's URL (default: origin and path; never the query). */
  recorded?: (url: URL) => string;
  /** More to record on each span (the provider's id): configuration, never the request's values. */
  attributes?: Attributes;
}

/**
 * `fetch` with a client span around each request and the active trace context in its headers (W3C
 * Trace Context `traceparent`, `tracestate`), so a provider or upstream that traces joins the trace.
 * The span records the method, the URL as `recorded` gives it and the status; never a header, a
 * body or a query. Outside a span or with tracing off, the request goes out as it came.
 */
export function tracedFetch<F extends Fetch>(fetch: F, call: TracedCall): F {
  const traced = ((input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    return inSpan(
      'http client',
      {},
      async (span) => {
        const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
        describe(span, call, input instanceof Request ? input.url : String(input), { ...init, method });
        const carrier = traceHeaders();
        const headers = carrier && new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
        if (carrier) for (const [name, value] of Object.entries(carrier)) headers!.set(name, value);
        const response = await fetch(input, headers ? { ...init, headers } : init);
        answered(span, response.status);
        return response;
      },
      { kind: SpanKind.CLIENT },
    );
  }) as F;
  // createRequestFetch's lighter POST (upstream MCP calls), traced the same way.
  const post = (fetch as Partial<{ post: Post }>).post;
  if (!post) return traced;
  const tracedPost: Post = (url, headers, body, signal) => {
    return inSpan(
      'http client',
      {},
      async (span) => {
        describe(span, call, url, { method: 'POST' });
        const carrier = traceHeaders();
        const answer = await post(url, carrier ? { ...headers, ...carrier } : headers, body, signal);
        answered(span, answer.status);
        return answer;
      },
      { kind: SpanKind.CLIENT },
    );
  };
  return Object.assign(traced, { post: tracedPost });
}

/** The active context's trace headers, or undefined when there are none to send (tracing off). */
function traceHeaders(): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier['traceparent'] === undefined ? undefined : carrier;
}

// Only for a span that records: with tracing off the URL is not even parsed.
function describe(span: Span, call: TracedCall, href: string, init: RequestInit): void {
  if (!span.isRecording()) return;
  const url = new URL(href);
  span.updateName(call.name(url, init));
  span.setAttributes({
    'http.request.method': (init.method ?? 'GET').toUpperCase(),
    'server.address': url.hostname,
    'url.full': call.recorded ? call.recorded(url) : `${url.origin}${url.pathname}`,
    ...call.attributes,
  });
}

function answered(span: Span, status: number): void {
  span.setAttribute('http.response.status_code', status);
  // OpenTelemetry HTTP semantic conventions: a client span is an error from 400 on.
  if (status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
  if (status >= 400) span.setAttribute('error.type', String(status));
}

/** The OAuth request a span names: what an authorization server is asked, from its path and grant type only. */
export function oauthCallName(url: URL, init: RequestInit | undefined): string {
  if (url.pathname.includes('/.well-known/')) return 'oauth discovery';
  const body = init?.body;
  if (body instanceof URLSearchParams) {
    const grant = body.get('grant_type');
    if (grant === 'authorization_code') return 'oauth token_exchange';
    if (grant === 'refresh_token') return 'oauth token_refresh';
    if (grant !== null) return 'oauth token_request';
    if (body.has('token')) return 'oauth revocation';
  }
  return `oauth ${(init?.method ?? 'GET').toUpperCase() === 'POST' ? 'POST' : 'GET'}`;
}
