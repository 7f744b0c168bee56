import { Gauge, type Registry } from 'prom-client';
import { State } from '../flow/navigationStates.js';
import type { Queryable } from '../db/pool.js';
import { evaluateGates } from '../ledger/gates.js';
import { findGateFigures, type GateFigures } from '../ledger/ledgerQueriesRepo.js';
import type { Logger } from '../shared/logger.js';
import { singleFlight } from '../shared/singleFlight.js';

// The release gates (the figures `broker ledger gates` prints), as
// gauges. Computed at scrape time at most once per `cacheMs`, so a scrape
// storm does not become a query storm. Cluster-wide like the ledger figures:
// use max() across instances, not sum().

export interface GateMetricsDeps {
  pool: Queryable;
  logger: Logger;
  cacheMs: number;
  now(): number;
  collectFailed(source: string): void;
}

export type GateFiguresReader = () => Promise<{ figures: GateFigures; at: Date }>;

/**
 * The gate figures read every flow (about 3 s at a million), so one process
 * reads them at most once per `cacheMs`, single-flight, for every caller (the
 * gauges and the operator dashboard). A failed read is not kept: the next call tries again.
 */
export function cachedGateFigures(deps: Pick<GateMetricsDeps, 'pool' | 'cacheMs' | 'now'>): GateFiguresReader {
  let last: { figures: GateFigures; at: Date } | undefined;
  const read = singleFlight(
    () => findGateFigures(deps.pool).then((figures) => (last = { figures, at: new Date(deps.now()) })),
    { keepResult: false },
  );
  return () => (last && deps.now() - last.at.getTime() < deps.cacheMs ? Promise.resolve(last) : read());
}

/** Registers the gauges over the shared read; returns what refreshes them. */
export function registerGateMetrics(
  registry: Registry,
  deps: Pick<GateMetricsDeps, 'logger' | 'collectFailed'> & { read: GateFiguresReader },
): () => Promise<void> {
  // Every gauge collects through this; one scrape is one read and, if it fails, one counted failure.
  const refresh = singleFlight(
    () =>
      deps.read().then(
        ({ figures }) => apply(figures),
        (err: unknown) => {
          deps.logger.warn({ err }, 'metrics: reading the gate figures failed; serving the last figures');
          deps.collectFailed('gates');
        },
      ),
    { keepResult: false },
  );
  const gauge = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Gauge<L>({
      name: `broker_gate_${name}`,
      help: `${help} Cluster-wide: use max(), not sum().`,
      labelNames,
      registers: [registry],
      collect: refresh,
    });

  const pass = gauge('pass', 'Whether a release gate passes (1) or is missed (0), by gate.', ['gate']);
  const reached = gauge(
    'flows_reached_provider',
    `Flows that reached the third party (have an ${State.OUT_OF_BAND_PENDING} entry).`,
  );
  const withReceipt = gauge('flows_with_consent_receipt', 'Of those, flows with a consent receipt.');
  const consentShare = gauge(
    'consent_share',
    'Share of flows that reached the third party with a consent receipt (target 1; NaN while there are none).',
  );
  const latency = gauge(
    'completion_to_verified_seconds',
    'Completion → verified latency quantiles over all flows (target p99 < 120 s; NaN while there are none).',
    ['quantile'],
  );
  const verified = gauge('completion_to_verified_flows', 'Flows measured for the completion → verified latency.');
  const expired = gauge('expired_flows', 'Expired flows.');
  const recoverable = gauge(
    'expired_recoverable_flows',
    'Expired flows with no operation accepted (a new call starts a new flow; target: all).',
  );
  const crossUser = gauge(
    'cross_user_bindings',
    "Consent or tokens bound to a subject other than the flow's (target 0).",
  );
  const unexpected = gauge('unexpected_completions', 'Completion events that advanced a flow out of order (target 0).');

  function apply(f: GateFigures): void {
    for (const g of evaluateGates(f)) pass.set({ gate: g.id }, g.pass ? 1 : 0);
    reached.set(f.consent.reached);
    withReceipt.set(f.consent.withReceipt);
    consentShare.set(f.consent.reached === 0 ? NaN : f.consent.withReceipt / f.consent.reached);
    latency.set({ quantile: '0.5' }, f.completionToVerified.p50 ?? NaN);
    latency.set({ quantile: '0.99' }, f.completionToVerified.p99 ?? NaN);
    verified.set(f.completionToVerified.count);
    expired.set(f.expired.total);
    recoverable.set(f.expired.recoverable);
    crossUser.set(f.crossUserBindings);
    unexpected.set(f.unexpectedCompletions);
  }
  return refresh;
}
