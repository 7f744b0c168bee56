import { context, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import type { Secret } from '../shared/secret.js';

/** OTEL_* as loadConfig parsed them (config.ts); absent, there is no tracing at all. */
export interface TracingSettings {
  /** Where spans are posted: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. */
  tracesUrl: URL;
  serviceName: string;
  /** OTEL_TRACES_SAMPLER_ARG: the share of new traces recorded; a caller's sampled flag is followed. */
  sampleRatio: number;
  /** OTEL_EXPORTER_OTLP_HEADERS (a collector's credentials). */
  headers: Secret | undefined;
}

export interface Tracing {
  /** Exports the spans ended so far (tests; a stop). */
  flush(): Promise<void>;
  /** Exports what is left, then puts the API's no-op back. */
  close(): Promise<void>;
}

/** How the spans go: in batches, so a request never waits on the collector. */
export interface TracingOptions {
  /** BatchSpanProcessor's delay (default the SDK's 5 s; tests use less). */
  scheduledDelayMillis?: number;
  /** Another exporter (tests); default OTLP/HTTP JSON to `tracesUrl`. */
  exporter?: SpanExporter;
}

/**
 * Registers the OpenTelemetry SDK as the API's global tracer provider, with the W3C trace-context
 * propagator and an AsyncLocalStorage context manager. Only main.ts calls this, and only when an OTLP
 * endpoint is set: the instrumented code reaches it through the API's globals (telemetry/spans.ts),
 * which without it are the API's no-op. The context manager's promise hook costs a few per cent of CPU
 * on Node 20 (upstreamMcpClient.ts), which is why nothing registers one with tracing off.
 */
export function startTracing(settings: TracingSettings, version: string, options: TracingOptions = {}): Tracing {
  const exporter =
    options.exporter ??
    new OTLPTraceExporter({
      url: settings.tracesUrl.href,
      headers: parseHeaders(settings.headers),
      timeoutMillis: 10_000,
    });
  const processor = new BatchSpanProcessor(exporter, {
    ...(options.scheduledDelayMillis !== undefined && { scheduledDelayMillis: options.scheduledDelayMillis }),
  });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': version }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanProcessors: [processor],
  });
  // Trace context only: W3C baggage would carry a caller's arbitrary entries on to providers.
  provider.register({ propagator: new W3CTraceContextPropagator() });
  return {
    flush: () => provider.forceFlush(),
    async close() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

// The W3C Baggage-like list of OTEL_EXPORTER_OTLP_HEADERS (OpenTelemetry Protocol Exporter spec): key=value, comma-separated, values percent-encoded.
function parseHeaders(headers: Secret | undefined): Record<string, string> {
  if (!headers) return {};
  const entries = headers
    .reveal()
    .split(',')
    .map((pair) => pair.split('='))
    .filter((parts) => parts.length >= 2 && parts[0]!.trim() !== '')
    .map(([key, ...value]) => [key!.trim(), decodeURIComponent(value.join('=').trim())]);
  return Object.fromEntries(entries);
}
