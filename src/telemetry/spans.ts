import {
  context,
  createContextKey,
  isSpanContextValid,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';

// Spans are made through the API's global tracer, as OpenTelemetry intends for instrumented code:
// until main.ts registers the SDK (telemetry/tracing.ts, only with an OTLP endpoint set) it is the
// API's no-op, whose spans record nothing and whose context manager keeps nothing, so a call through
// inSpan costs a few hundred nanoseconds and no allocation beyond the call's own. Read on each use,
// not kept: a test may register a provider and remove it again (trace.disable()).
const tracer = () => trace.getTracer('connect-broker');

const REQUEST_SPAN = createContextKey('connect-broker: the MCP request span');

/**
 * Runs `fn` in a new active span, child of the active context (or of `parent`), and ends it when
 * `fn` settles. A failure marks the span as an error with `error.type` only (errorType below): an
 * exception's message or stack never goes into a span, since it may quote a token or an argument.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  options: SpanOptions = {},
  parent: Context = context.active(),
): Promise<T> {
  const span = tracer().startSpan(name, { ...options, attributes }, parent);
  // The API's no-op span, outside any trace (tracing off): the call as it would be without a span.
  if (isNoop(span)) return fn(span);
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A span that records nothing and names no trace: what every span is with tracing off. */
export const isNoop = (span: Span): boolean => !span.isRecording() && !isSpanContextValid(span.spanContext());

/** Starts a span that is not made active (the caller runs its work in `context.with`), e.g. one dated from earlier. */
export function startSpan(name: string, options: SpanOptions, parent: Context): Span {
  return tracer().startSpan(name, options, parent);
}

/** Marks `span` failed by `err`'s class and code, never its message. */
export function failed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute('error.type', errorType(err));
}

// An error's own `code` where it is a short identifier (an AppError's, a SQLSTATE, an errno name, a
// JSON-RPC code): it says what failed and cannot hold a secret. Otherwise its class name.
export function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if ((typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) || Number.isInteger(code)) return String(code);
  const name = (err as { name?: unknown } | null)?.name;
  return typeof name === 'string' && /^[A-Za-z0-9_]{1,64}$/.test(name) ? name : 'Error';
}

/** An MCP request's span, and its outcome as the code that answered it names it. */
export interface RequestTrace {
  span: Span;
  outcome?: string;
}

/** The context with `request.span` active, and found again by markRequest from the spans below it. */
export const withRequestSpan = (ctx: Context, request: RequestTrace): Context =>
  trace.setSpan(ctx, request.span).setValue(REQUEST_SPAN, request);

/**
 * Sets attributes on the MCP request span of the active context (the lineage a use case learns, the
 * tool's name once it is known) and its `outcome`, wherever in the call the code that knows them
 * runs; nothing outside one.
 */
export function markRequest(attributes: Attributes, outcome?: string): void {
  const request = context.active().getValue(REQUEST_SPAN) as RequestTrace | undefined;
  if (!request) return;
  request.span.setAttributes(attributes);
  if (outcome !== undefined) request.outcome = outcome;
}
