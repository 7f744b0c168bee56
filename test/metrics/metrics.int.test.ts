import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sweepOnce } from '../../src/jobs/sweeps.js';
import { createPool } from '../../src/db/pool.js';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { mcpPost, meta } from '../support/mcpWire.js';
import { familyLines, sampleValue } from '../support/metricsText.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

const logger = createLogger({ level: 'silent' });
const TOKEN = randomBytes(32).toString('base64url');
const LEDGER_FAMILIES = ['broker_flow_transitions_total', 'broker_completion_to_verified_seconds'];

describe('GET /metrics', () => {
  let metrics: Metrics;
  const { stack, tokens } = useBrokerStack(
    { metrics: (pool) => (metrics = createMetrics({ pool, logger, gateCacheMs: 0 })), metricsToken: TOKEN },
    { users: ['alice'] },
  );

  async function scrape(baseUrl = stack.brokerUrl): Promise<string> {
    const response = await stack.fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    return response.text();
  }

  it('answers 401 without the METRICS_TOKEN bearer and the exposition with it', async () => {
    for (const authorization of [
      undefined,
      `Bearer ${TOKEN.slice(0, -1)}x`,
      `Bearer ${TOKEN}x`,
      `Basic ${TOKEN}`,
      `Bearer  ${TOKEN}`,
    ]) {
      const denied = await stack.fetch(`${stack.brokerUrl}/metrics`, {
        headers: authorization ? { authorization, accept: 'application/json' } : { accept: 'application/json' },
      });
      expect(denied.status, String(authorization)).toBe(401);
      expect(denied.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect(await denied.json()).toMatchObject({
        error: 'unauthenticated',
        message: expect.stringContaining('METRICS_TOKEN'),
      });
    }
    const response = await stack.fetch(`${stack.brokerUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4; charset=utf-8$/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const text = await response.text();
    expect(sampleValue(text, 'broker_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(
      sampleValue(await scrape(), 'broker_http_requests_total', { route: '/metrics', method: 'GET', status: '401' }),
    ).toBe(5);
  });

  it('counts requests by route template, method and status, /mcp included', async () => {
    const listed = await mcpPost(
      stack,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta() } },
      { token: tokens.alice },
    );
    expect(listed.status).toBe(200);
    expect(
      (await mcpPost(stack, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: meta() } })).status,
    ).toBe(401);
    expect((await stack.fetch(`${stack.brokerUrl}/healthz`)).status).toBe(200);
    expect((await stack.fetch(`${stack.brokerUrl}/no/such/${randomBytes(8).toString('hex')}`)).status).toBe(404);

    const text = await scrape();
    expect(
      sampleValue(text, 'broker_http_requests_total', { route: '/mcp', method: 'POST', status: '200' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(text, 'broker_http_requests_total', { route: '/mcp', method: 'POST', status: '401' }),
    ).toBeGreaterThanOrEqual(1);
    expect(sampleValue(text, 'broker_http_requests_total', { route: '/healthz', method: 'GET', status: '200' })).toBe(
      1,
    );
    expect(sampleValue(text, 'broker_http_requests_total', { route: 'other', method: 'GET', status: '404' })).toBe(1);
    expect(
      sampleValue(text, 'broker_http_request_duration_seconds_count', { route: '/mcp', method: 'POST' }),
    ).toBeGreaterThanOrEqual(2);
  });

  it('counts flow transitions and observes completion latency after a connect flow; a restarted instance reports the same totals', async () => {
    const before = await scrape();
    expect(sampleValue(before, 'broker_completion_to_verified_seconds_count')).toBe(0);

    const args = { title: 'Metrics TPS', body: 'Cover sheet attached.' };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const done = await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    expect(done.text).toContain('Report Service is connected');
    const accepted = await retryConnection(
      stack,
      tokens.alice,
      'reports_create',
      args,
      elicited.requestState,
      'accept',
    );
    expect(accepted.json.result).toMatchObject({ resultType: 'complete' });

    const text = await scrape();
    for (const [event, to_status] of [
      ['browser_consent', 'OUT_OF_BAND_PENDING'],
      ['callback_received', 'COMPLETION_NOTIFIED'],
      ['callback_verified', 'REQUIREMENT_VERIFIED'],
      ['mrtr_accept', 'MRTR_RETRY_ACCEPTED'],
    ] as const) {
      expect(sampleValue(text, 'broker_flow_transitions_total', { event, to_status }), event).toBe(1);
    }
    expect(sampleValue(text, 'broker_completion_to_verified_seconds_count')).toBe(1);
    expect(sampleValue(text, 'broker_completion_to_verified_seconds_sum')).toBeGreaterThan(0);
    expect(sampleValue(text, 'broker_completion_to_verified_seconds_bucket', { le: '120' })).toBe(1);
    expect(
      sampleValue(text, 'broker_http_requests_total', { route: '/connect/:handle', method: 'GET', status: '200' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(text, 'broker_http_requests_total', {
        route: '/oauth/callback/:provider',
        method: 'GET',
        status: '303',
      }),
    ).toBe(1);
    // Never a handle, a subject or a token in a label.
    const handle = new URL(elicited.url).pathname.split('/').at(-1)!;
    expect(text).not.toContain(handle);
    expect(text).not.toMatch(/alice|eyJ/);

    // The second instance never scraped before: its first scrape catches up over the same ledger.
    const second = await scrape(stack.secondUrl);
    expect(familyLines(second, ...LEDGER_FAMILIES)).toEqual(familyLines(text, ...LEDGER_FAMILIES));
    expect(familyLines(second, ...LEDGER_FAMILIES).length).toBeGreaterThan(LEDGER_FAMILIES.length);
    const restarted = createMetrics({ pool: stack.db.newPool(), logger, processMetrics: false });
    expect(familyLines(await restarted.registry.metrics(), ...LEDGER_FAMILIES)).toEqual(
      familyLines(text, ...LEDGER_FAMILIES),
    );
  });

  it("reports the release gates' figures as gauges", async () => {
    const text = await scrape();
    for (const gate of [
      'consent_receipts',
      'completion_p99',
      'expired_recoverable',
      'cross_user_bindings',
      'unexpected_completions',
    ]) {
      expect(sampleValue(text, 'broker_gate_pass', { gate }), gate).toBe(1);
    }
    expect(sampleValue(text, 'broker_gate_flows_reached_provider')).toBe(1);
    expect(sampleValue(text, 'broker_gate_flows_with_consent_receipt')).toBe(1);
    expect(sampleValue(text, 'broker_gate_consent_share')).toBe(1);
    expect(sampleValue(text, 'broker_gate_completion_to_verified_flows')).toBe(1);
    expect(sampleValue(text, 'broker_gate_completion_to_verified_seconds', { quantile: '0.99' })).toBeLessThan(120);
    expect(sampleValue(text, 'broker_gate_cross_user_bindings')).toBe(0);
    expect(sampleValue(text, 'broker_gate_unexpected_completions')).toBe(0);
    expect(sampleValue(text, 'broker_gate_expired_flows')).toBe(0);
  });

  it('counts sweeps by outcome and swept rows by kind', async () => {
    const past = new Date(Date.now() - 60_000);
    await stack.db.pool.query('INSERT INTO web_sessions (id_digest, created_at, expires_at) VALUES ($1, $2, $3)', [
      randomBytes(32),
      new Date(past.getTime() - 60_000),
      past,
    ]);
    const hooks = { onSweep: (r: object) => metrics.sweepSucceeded(r), onSweepFailed: () => metrics.sweepFailed() };
    const result = await sweepOnce({ pool: stack.db.pool, clock: systemClock, logger, ...hooks });
    expect(result.sessions).toBeGreaterThanOrEqual(1);
    const down = createPool({ url: stack.db.url, poolMax: 1, schema: stack.db.schema }, logger);
    await down.end();
    await expect(sweepOnce({ pool: down, clock: systemClock, logger, ...hooks })).rejects.toThrow();

    const text = await scrape();
    expect(sampleValue(text, 'broker_sweeps_total', { outcome: 'ok' })).toBe(1);
    expect(sampleValue(text, 'broker_sweeps_total', { outcome: 'failed' })).toBe(1);
    expect(sampleValue(text, 'broker_sweep_rows_total', { kind: 'sessions' })).toBe(result.sessions);
    expect(sampleValue(text, 'broker_sweep_rows_total', { kind: 'expired_navigations' })).toBe(
      result.expiredNavigations,
    );
    expect(sampleValue(text, 'broker_sweep_rows_total', { kind: 'oauth_transactions' })).toBe(result.oauthTransactions);
  });
});
