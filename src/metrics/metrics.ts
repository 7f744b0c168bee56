import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { Queryable } from '../db/pool.js';
import type { FormAuditRule, FormOrigin } from '../security/formAudit.js';
import type { Logger } from '../shared/logger.js';
import { cachedGateFigures, registerGateMetrics, type GateFiguresReader } from './gateMetrics.js';
import { registerLedgerMetrics } from './ledgerMetrics.js';
import { registerPinMetrics } from './pinMetrics.js';
import { methodLabel } from './routeLabel.js';

// GET /metrics, Prometheus text. Per-instance figures (HTTP requests, sweeps,
// process) are summed across instances; ledger and gate figures are
// cluster-wide (see ledgerMetrics.ts) and are aggregated with max().
// No label ever carries a subject, a token, a handle or a raw path.

export interface MetricsDeps {
  pool: Queryable;
  logger: Logger;
  /** How long gate figures are reused between scrapes (default 30 s). */
  gateCacheMs?: number;
  /** Process metrics (CPU, memory, event loop, GC), prefixed broker_ (default true). */
  processMetrics?: boolean;
  now?: () => number;
}

export interface Metrics {
  /** This instance's own registry (never prom-client's global one). */
  registry: Registry;
  /** Counts the request once its response is done (or the connection closed first: status "aborted"). */
  observeRequest(req: IncomingMessage, res: ServerResponse, route: string): void;
  /** One sweep's results (src/jobs/sweeps.ts). */
  sweepSucceeded(rows: object): void;
  sweepFailed(): void;
  /** One form elicitation the audit refused (src/mcp/formGuard.ts), by its first rule and who wrote it. */
  formRefused(rule: FormAuditRule, origin: FormOrigin): void;
  /** One request to an upstream MCP server (src/upstream/upstreamTools.ts), by its provider id, kind and outcome. */
  upstreamCall(upstream: string, method: 'tools/call' | 'tools/list', outcome: UpstreamOutcome): void;
  /** What upstreamCall counted on this instance, since this registry was made (the operator dashboard). */
  upstreamCallCounts: UpstreamCallCountsReader;
  /** The release gates' figures, read at most once per gateCacheMs for every caller (gauges, dashboard). */
  gateFigures: GateFiguresReader;
}

/** How a request to an upstream MCP server ended (an unknown outcome: sent, and no answer read). */
export type UpstreamOutcome = 'ok' | 'tool_error' | 'upstream_error' | 'unauthorized' | 'unreachable' | 'unknown';

export interface UpstreamCallCount {
  upstream: string;
  method: string;
  outcome: UpstreamOutcome;
  count: number;
}

/** In-memory counters: they start at zero with the process and are this instance's alone. */
export type UpstreamCallCountsReader = () => Promise<{ since: Date; counts: UpstreamCallCount[] }>;

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createMetrics(deps: MetricsDeps): Metrics {
  const registry = new Registry();
  const since = new Date((deps.now ?? Date.now)());
  if (deps.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'broker_' });

  const requests = new Counter({
    name: 'broker_http_requests_total',
    help: 'HTTP requests answered by this instance, by route template, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'broker_http_request_duration_seconds',
    help: 'Time from request to the end of its response, by route template and method (long-lived streams included).',
    labelNames: ['route', 'method'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const sweepRows = new Counter({
    name: 'broker_sweep_rows_total',
    help: 'Rows the background sweep expired or deleted on this instance, by kind.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const sweeps = new Counter({
    name: 'broker_sweeps_total',
    help: 'Background sweeps run by this instance, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const formRefusals = new Counter({
    name: 'broker_form_refusals_total',
    help: 'Form elicitations refused by the form-schema audit on this instance, never sent, by first rule and origin (broker or upstream).',
    labelNames: ['rule', 'origin'] as const,
    registers: [registry],
  });
  const upstreamCalls = new Counter({
    name: 'broker_upstream_requests_total',
    help: 'Requests this instance sent to upstream MCP servers, by upstream (its provider id), method and outcome (ok, tool_error, upstream_error, unauthorized, unreachable, unknown).',
    labelNames: ['upstream', 'method', 'outcome'] as const,
    registers: [registry],
  });
  const collectErrors = new Counter({
    name: 'broker_metrics_collect_errors_total',
    help: 'Scrapes that could not read the database for a figure (the last figures were served), by source.',
    labelNames: ['source'] as const,
    registers: [registry],
    // The registry reads every family at once: wait for this scrape's reads, so their failures show in it.
    collect: () => Promise.all([syncLedger(), refreshGates()]).then(() => undefined),
  });
  const collectFailed = (source: string) => collectErrors.inc({ source });
  const syncLedger = registerLedgerMetrics(registry, { pool: deps.pool, logger: deps.logger, collectFailed });
  const gateFigures = cachedGateFigures({
    pool: deps.pool,
    cacheMs: deps.gateCacheMs ?? 30_000,
    now: deps.now ?? Date.now,
  });
  const refreshGates = registerGateMetrics(registry, { logger: deps.logger, collectFailed, read: gateFigures });
  registerPinMetrics(registry, { pool: deps.pool, logger: deps.logger, collectFailed });

  return {
    registry,
    gateFigures,
    observeRequest(req, res, route) {
      const started = performance.now();
      res.once('close', () => {
        const method = methodLabel(req.method);
        requests.inc({ route, method, status: res.writableFinished ? String(res.statusCode) : 'aborted' });
        duration.observe({ route, method }, (performance.now() - started) / 1000);
      });
    },
    sweepSucceeded(rows) {
      sweeps.inc({ outcome: 'ok' });
      // Every kind appears (0 included), so a rate() has a series from the first sweep on.
      for (const [kind, n] of Object.entries(rows))
        if (typeof n === 'number') sweepRows.inc({ kind: snakeCase(kind) }, n);
    },
    sweepFailed() {
      sweeps.inc({ outcome: 'failed' });
    },
    formRefused(rule, origin) {
      formRefusals.inc({ rule, origin });
    },
    upstreamCall(upstream, method, outcome) {
      upstreamCalls.inc({ upstream, method, outcome });
    },
    async upstreamCallCounts() {
      const { values } = await upstreamCalls.get();
      const counts = values.map(({ labels, value }) => ({
        upstream: String(labels.upstream),
        method: String(labels.method),
        outcome: labels.outcome as UpstreamOutcome,
        count: value,
      }));
      return { since, counts };
    },
  };
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
