import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { inSpan, markRequest } from '../../src/telemetry/spans.js';
import { activeTraceparent, mcpParent } from '../../src/telemetry/traceContext.js';
import { tracedFetch } from '../../src/telemetry/tracedFetch.js';
import type { Fetch } from '../../src/shared/httpClient.js';

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
};

describe('tracing settings (OTEL_*)', () => {
  it('leaves tracing off when no OTLP endpoint is set', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).telemetry).toBeUndefined();
    expect(loadConfig({ NODE_ENV: 'test', OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_ENDPOINT: '' }).telemetry).toBe(
      undefined,
    );
  });

  it('sends spans to the base endpoint plus /v1/traces, or to the traces endpoint as it is', () => {
    const base = loadConfig({ NODE_ENV: 'test', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' }).telemetry;
    expect(base).toMatchObject({ serviceName: 'connect-broker', sampleRatio: 1, headers: undefined });
    expect(base?.tracesUrl.href).toBe('http://127.0.0.1:4318/v1/traces');
    const own = loadConfig({
      NODE_ENV: 'test',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector.example/otlp/traces',
      OTEL_SERVICE_NAME: 'broker-eu',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc',
    }).telemetry;
    expect(own?.tracesUrl.href).toBe('https://collector.example/otlp/traces');
    expect(own).toMatchObject({ serviceName: 'broker-eu', sampleRatio: 0.25 });
    expect(own?.headers?.reveal()).toBe('authorization=Bearer%20abc');
    expect(String(own?.headers)).not.toContain('abc');
  });

  it('refuses a sampler ratio outside 0..1, a URL that is not http(s), and headers that are not key=value pairs', () => {
    const problems = problemsOf({
      NODE_ENV: 'test',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://127.0.0.1:4317',
      OTEL_TRACES_SAMPLER_ARG: '2',
      OTEL_EXPORTER_OTLP_HEADERS: 'no-value',
    });
    for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_TRACES_SAMPLER_ARG', 'OTEL_EXPORTER_OTLP_HEADERS'])
      expect(problems.some((p) => p.startsWith(`${name}:`))).toBe(true);
  });

  it('refuses a plain-http endpoint in production unless it is on loopback', () => {
    const otlp = (url: string) =>
      problemsOf({ NODE_ENV: 'production', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url }).filter((p) =>
        p.startsWith('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'),
      );
    expect(otlp('http://collector.internal:4318/v1/traces')).toEqual([
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be https in production, unless on loopback',
    ]);
    expect(otlp('http://127.0.0.1:4318/v1/traces')).toEqual([]);
    expect(otlp('http://localhost:4318/v1/traces')).toEqual([]);
    expect(otlp('https://collector.internal/v1/traces')).toEqual([]);
  });
});

// Nothing registers the SDK in this file, as main.ts registers nothing without an endpoint.
describe('with tracing off', () => {
  it('has the API no-op as the global tracer provider: spans record nothing and carry no context', async () => {
    expect(trace.getTracer('connect-broker').startSpan('probe').isRecording()).toBe(false);
    const seen = await inSpan('broker startNavigation', { 'broker.lineage': 'mrtr' }, async (span) => {
      markRequest({ 'broker.lineage': 'mrtr' }, 'complete');
      return { recording: span.isRecording(), stored: activeTraceparent(), active: trace.getActiveSpan() };
    });
    expect(seen).toEqual({ recording: false, stored: undefined, active: undefined });
  });

  it("ignores a caller's trace context and sends a request exactly as it came, with no trace headers", async () => {
    const headers = { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` };
    expect(trace.getSpanContext(mcpParent(headers, { traceparent: headers.traceparent }).parent)).toBeUndefined();
    const sent: unknown[] = [];
    const fetch = (async (...args: unknown[]) => {
      sent.push(args);
      return new Response('ok');
    }) as Fetch;
    const init = { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' };
    await tracedFetch(fetch, { name: () => 'provider.api POST' })('https://api.example/items?q=1', init);
    expect(sent).toEqual([['https://api.example/items?q=1', init]]);
    expect((sent[0] as unknown[])[1]).toBe(init);
  });
});
