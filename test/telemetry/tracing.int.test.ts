import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineConnectionTool } from '../../src/mcp/defineConnectionTool.js';
import { completeResult } from '../../src/mcp/defineTool.js';
import { createLogger } from '../../src/shared/logger.js';
import { inSpan } from '../../src/telemetry/spans.js';
import { startTracing, type Tracing } from '../../src/telemetry/tracing.js';
import { authorizeUpToCallback, openConnectLink, URL_CAPS } from '../support/connectFlow.js';
import { callTool, mcpPost, meta } from '../support/mcpWire.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlpReceiver.js';
import { plainProviderEntry, startPlainOAuthServer, type PlainOAuthServer } from '../support/plainOAuthServer.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The broker with tracing on (as main.ts starts it with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set), its
// spans exported as OTLP/HTTP JSON to a receiver in this process; the provider is the plain OAuth
// server (test/support/plainOAuthServer.ts), which records the trace context each request brings.

const TOOL = 'traced_create_item';
const tracedCreateItem = defineConnectionTool({
  name: TOOL,
  title: 'Create a Plain OAuth item',
  description: 'Creates an item titled `title` in your Plain OAuth account.',
  provider: 'plain',
  scopes: ['profile'],
  input: z.strictObject({ title: z.string().min(1).max(100) }),
  purpose: (input) => `create the item ${input.title}`,
  async perform({ input, fetch, idempotencyKey }) {
    const response = await fetch('/items', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify({ title: input.title }),
    });
    return { status: response.status === 201 ? 'created' : 'refused' };
  },
  render: (outcome) => completeResult('Done.', outcome),
});

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const idsOf = (traceparent: string | undefined) => {
  const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(traceparent ?? '') ?? [];
  return { traceId, spanId };
};

describe('tracing, exported over OTLP/HTTP JSON', () => {
  let plain: PlainOAuthServer;
  let receiver: OtlpReceiver;
  let tracing: Tracing;
  const { stack, tokens } = useBrokerStack(
    {
      retryWaitMs: 300,
      extraTools: [tracedCreateItem],
      extraProviders: async ({ brokerUrl, tls }) => {
        plain = await startPlainOAuthServer({ tls, redirectUri: `${brokerUrl}/oauth/callback/plain` });
        return [plainProviderEntry(plain)];
      },
    },
    { users: ['alice'] },
  );
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const settings = {
      tracesUrl: receiver.tracesUrl,
      serviceName: 'connect-broker',
      sampleRatio: 1,
      headers: undefined,
    };
    tracing = startTracing(settings, 'test', { scheduledDelayMillis: 10 });
  });
  afterAll(async () => {
    await tracing?.close();
    await receiver?.close();
    await plain?.close();
  });

  const spansNamed = (name: string, where: (s: ReceivedSpan) => boolean = () => true) =>
    receiver.spans().filter((s) => s.name === name && where(s));
  const theSpan = (name: string, where?: (s: ReceivedSpan) => boolean) => {
    const found = spansNamed(name, where);
    expect(found, `one ${name} span`).toHaveLength(1);
    return found[0]!;
  };
  // A request's span ends just after its answer is sent: flushed until the last one expected is there.
  const exported = (last: (s: ReceivedSpan) => boolean) =>
    vi.waitFor(async () => {
      await tracing.flush();
      expect(receiver.spans().some(last)).toBe(true);
    });
  const childOf = (parent: ReceivedSpan) => (s: ReceivedSpan) =>
    s.traceId === parent.traceId && s.parentSpanId === parent.spanId;

  it('makes one connect flow one trace: the MCP call, the connect page, the consent, the callback, its token exchange and transactions; the accepting retry links to it', async () => {
    const host = { traceId: hex(16), spanId: hex(8) };
    const title = `canary-argument-${hex(6)}`;
    const first = await callTool(stack, tokens.alice, TOOL, { title }, {}, URL_CAPS, {
      headers: { traceparent: `00-${host.traceId}-${host.spanId}-01` },
    });
    const asked = first.json.result as {
      resultType: string;
      requestState: string;
      inputRequests: { connect: { params: { url: string } } };
    };
    expect(asked.resultType).toBe('input_required');
    const connectUrl = asked.inputRequests.connect.params.url;
    const run = await openConnectLink(stack, connectUrl, 'alice');
    const callbackUrl = await authorizeUpToCallback(run, 'alice', 'plain');
    expect((await run.browser.get(callbackUrl)).text).toContain('Plain OAuth is connected');
    const retry = { traceId: hex(16), spanId: hex(8) };
    const second = await callTool(
      stack,
      tokens.alice,
      TOOL,
      { title },
      { requestState: asked.requestState, inputResponses: { connect: { action: 'accept' } } },
      URL_CAPS,
      { headers: { traceparent: `00-${retry.traceId}-${retry.spanId}-01` } },
    );
    expect(second.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    await exported((s) => s.name === 'mcp tools/call' && s.traceId === retry.traceId);

    // The host's call: a child of the host's span, in its trace, with what it was.
    const call = theSpan('mcp tools/call', (s) => s.traceId === host.traceId);
    expect(call.parentSpanId).toBe(host.spanId);
    expect(call.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': TOOL,
      'mcp.protocol.version': '2026-07-28',
      'broker.lineage': 'mrtr',
      'broker.mcp.outcome': 'input_required',
      'http.response.status_code': 200,
    });
    expect(call.resource).toMatchObject({ 'service.name': 'connect-broker', 'service.version': 'test' });
    const started = theSpan('broker startNavigation', childOf(call));
    expect(started.attributes).toMatchObject({
      'broker.lineage': 'mrtr',
      'broker.provider': 'plain',
      'broker.tool': TOOL,
    });
    const navigationId = started.attributes['broker.navigation.id'];
    expect(spansNamed('db transaction', childOf(started))).toHaveLength(1);

    // The browser leg, other requests: children of the span that started the flow, in the host's trace.
    const pages = spansNamed('connect page', childOf(started));
    expect(pages.length).toBeGreaterThanOrEqual(1);
    const consent = theSpan('connect consent', childOf(started));
    expect(consent.attributes).toMatchObject({ 'broker.navigation.id': navigationId, 'broker.provider': 'plain' });
    expect(spansNamed('db flow write', childOf(consent)).length).toBeGreaterThanOrEqual(1);
    const callback = theSpan('connect callback', childOf(started));
    const exchange = theSpan('oauth token_exchange', childOf(callback));
    expect(exchange.attributes).toMatchObject({
      'http.request.method': 'POST',
      'url.full': `${plain.issuer}/token`,
      'http.response.status_code': 200,
    });
    expect(spansNamed('db transaction', childOf(callback))).toHaveLength(1);
    // The provider received the exchange's own context.
    expect(plain.tokenRequests.map((r) => idsOf(r.traceparent))).toEqual([
      { traceId: host.traceId, spanId: exchange.spanId },
    ]);

    // The host's retry: its own trace, the acceptance linked to the span that started the flow.
    const retried = theSpan('mcp tools/call', (s) => s.traceId === retry.traceId);
    expect(retried.parentSpanId).toBe(retry.spanId);
    expect(retried.attributes).toMatchObject({ 'broker.lineage': 'mrtr', 'broker.mcp.outcome': 'complete' });
    const accepted = theSpan('broker acceptOriginalOperation', childOf(retried));
    expect(accepted.links).toEqual([{ traceId: host.traceId, spanId: started.spanId }]);
    expect(accepted.attributes).toMatchObject({ 'broker.navigation.id': navigationId, 'broker.receipt.created': true });
    const apiCall = theSpan('provider.api POST', (s) => s.traceId === retry.traceId);
    expect(apiCall.attributes).toMatchObject({ 'url.full': `${plain.issuer}/api`, 'broker.provider': 'plain' });
    expect(plain.itemCalls.map((c) => idsOf(c.traceparent))).toEqual([
      { traceId: retry.traceId, spanId: apiCall.spanId },
    ]);

    // Nothing secret, and no argument, in anything exported.
    const returned = new URL(callbackUrl);
    const canaries = {
      argument: title,
      code: returned.searchParams.get('code')!,
      state: returned.searchParams.get('state')!,
      handle: new URL(connectUrl).pathname.split('/').at(-1)!,
      requestState: asked.requestState,
      mcpToken: tokens.alice,
      clientSecret: plain.clientSecret,
      ...Object.fromEntries(plain.tokensOf('alice').map((t, i) => [`providerToken${i}`, t])),
    };
    expect(Object.values(canaries).every((c) => c.length >= 8)).toBe(true);
    const payload = receiver.payloads().join('\n');
    for (const [what, canary] of Object.entries(canaries)) expect(payload.includes(canary), what).toBe(false);
    for (const s of receiver.spans()) expect(String(s.attributes['url.full'] ?? '')).not.toContain('?');
  });

  it("takes a call's parent from _meta.traceparent when the header names another trace (the header then a link), and from the header when both are one trace", async () => {
    const client = { traceId: hex(16), spanId: hex(8) };
    const list = (traceparent: string, header: string) =>
      mcpPost(
        stack,
        { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { ...meta(), traceparent } } },
        { token: tokens.alice, headers: { traceparent: header } },
      );
    const ingress = { traceId: hex(16), spanId: hex(8) };
    expect(
      (await list(`00-${client.traceId}-${client.spanId}-01`, `00-${ingress.traceId}-${ingress.spanId}-01`)).status,
    ).toBe(200);
    const gateway = hex(8);
    expect((await list(`00-${client.traceId}-${client.spanId}-01`, `00-${client.traceId}-${gateway}-01`)).status).toBe(
      200,
    );
    await exported((s) => s.name === 'mcp tools/list' && s.parentSpanId === gateway);
    const lists = spansNamed('mcp tools/list', (s) => s.traceId === client.traceId);
    expect(lists.map((s) => [s.parentSpanId, s.links]).sort()).toEqual(
      [
        [client.spanId, [ingress]],
        [gateway, []],
      ].sort(),
    );
  });

  it('writes the trace and span ids on the log lines written inside a span, and none outside', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const inside = await inSpan('test span', {}, async (span) => {
      logger.info('inside');
      return span.spanContext();
    });
    logger.info('outside');
    expect(JSON.parse(lines[0]!)).toMatchObject({ trace_id: inside.traceId, span_id: inside.spanId });
    expect(JSON.parse(lines[1]!)).not.toHaveProperty('trace_id');
  });
});
