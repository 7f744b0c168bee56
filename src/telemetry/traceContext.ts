import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  trace,
  type Context,
  type Link,
  type SpanContext,
} from '@opentelemetry/api';

// W3C Trace Context §3.2, version 00: the only form the broker reads or stores.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
// §3.3: at most 32 list members of printable characters; longer is dropped, not cut.
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

/** A `traceparent` value as a remote span context; undefined unless it is well formed and its ids are not all zeros. */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  const match = typeof value === 'string' ? TRACEPARENT.exec(value) : null;
  if (!match) return undefined;
  const spanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: parseInt(match[3]!, 16) & 1,
    isRemote: true,
  };
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** The active span's context as a `traceparent` value, to be stored with a flow; undefined outside a span (tracing off). */
export function activeTraceparent(): string | undefined {
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return undefined;
  return `00-${spanContext.traceId}-${spanContext.spanId}-0${spanContext.traceFlags & 1}`;
}

/**
 * Where an MCP request's span belongs. The HTTP headers (`traceparent`, `tracestate`) are set by the
 * nearest hop; `_meta.traceparent` by the MCP client itself (the MCP convention for trace context in
 * `_meta`), which also crosses transports without headers (a stdio bridge). Both in one trace: the
 * header is the nearer parent (a gateway's span below the client's). In two traces: `_meta` names the
 * client's operation and wins, and the header's context is kept as a link (an ingress that began a
 * trace of its own). Neither: a root.
 */
export function mcpParent(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  meta: unknown,
): { parent: Context; links: Link[] } {
  const fromHeaders = propagation.extract(ROOT_CONTEXT, {
    traceparent: single(headers['traceparent']),
    tracestate: single(headers['tracestate']),
  });
  const headerSpan = trace.getSpanContext(fromHeaders);
  const m = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>) : {};
  const metaSpan = parseTraceparent(m['traceparent']);
  if (!metaSpan || (headerSpan && headerSpan.traceId === metaSpan.traceId)) return { parent: fromHeaders, links: [] };
  const state = typeof m['tracestate'] === 'string' && TRACESTATE.test(m['tracestate']) ? m['tracestate'] : undefined;
  const fromMeta = propagation.extract(ROOT_CONTEXT, { traceparent: m['traceparent'] as string, tracestate: state });
  return { parent: fromMeta, links: headerSpan ? [{ context: headerSpan }] : [] };
}

/**
 * The context a flow's browser leg continues: the span that started the flow (its stored
 * `traceparent`, navigationRepo.ts), else the active one (a flow stored without, tracing off then).
 */
export function flowParent(stored: string | undefined): Context {
  const spanContext = parseTraceparent(stored);
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : context.active();
}

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
