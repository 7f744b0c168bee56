import { Counter, Histogram, type Registry } from 'prom-client';
import { State } from '../flow/navigationStates.js';
import type { Queryable } from '../db/pool.js';
import type { Logger } from '../shared/logger.js';
import {
  countTransitions,
  currentSnapshot,
  findChunkEnd,
  findCompletionLatencyBuckets,
  NOTHING_COUNTED,
  WINDOW_START,
  type LatencyBucket,
  type WindowKey,
} from './ledgerMetricsRepo.js';
import { singleFlight } from '../shared/singleFlight.js';

// Flow figures derived from the append-only ledger at scrape time, so they are
// exact and survive restarts: the first scrape of a process counts the whole
// history (aggregated in SQL, chunk by chunk), later scrapes only the rows
// committed since. They are CLUSTER-WIDE: every instance reads the same ledger
// and reports the same totals, so aggregate across instances with max(), never
// sum().

/** The release gate is p99 < 120 s (ledger/gates.ts); the buckets resolve around it. */
export const COMPLETION_BUCKETS = [0.5, 1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600] as const;
const CHUNK = 250_000;
const MAX_CHUNKS_PER_SCRAPE = 20;

export interface LedgerMetricsDeps {
  pool: Queryable;
  logger: Logger;
  /** Counts a failed read, by source; the scrape still answers with the last figures. */
  collectFailed(source: string): void;
}

/** Registers the instruments; returns the (single-flight) read that brings them up to date. */
export function registerLedgerMetrics(registry: Registry, deps: LedgerMetricsDeps): () => Promise<void> {
  // Every row visible in `counted` is in the figures below; `open` is the window being read past it.
  let counted = NOTHING_COUNTED;
  let open: { upto: string; after: WindowKey } | undefined;
  // Both instruments are filled by one read; a scrape waits for it whichever it asks first.
  const sync = singleFlight(
    () =>
      catchUp().catch((err: unknown) => {
        deps.logger.warn({ err }, 'metrics: reading the ledger failed; serving the last figures');
        deps.collectFailed('ledger');
      }),
    { keepResult: false },
  );

  const transitions = new Counter({
    name: 'broker_flow_transitions_total',
    help: 'Ledger entries (navigation_events) by event and resulting state. Cluster-wide: the same on every instance (use max(), not sum()).',
    labelNames: ['event', 'to_status'] as const,
    registers: [registry],
    collect: sync,
  });
  const completion = new Histogram({
    name: 'broker_completion_to_verified_seconds',
    help: `Seconds from ${State.OUT_OF_BAND_PENDING} to ${State.REQUIREMENT_VERIFIED} per flow, from the ledger (release gate: p99 < 120 s). Cluster-wide: use max(), not sum().`,
    buckets: [...COMPLETION_BUCKETS],
    registers: [registry],
    collect: sync,
  });

  async function catchUp(): Promise<void> {
    open ??= { upto: await currentSnapshot(deps.pool), after: WINDOW_START };
    for (let i = 0; i < MAX_CHUNKS_PER_SCRAPE && open; i++) {
      const through = await findChunkEnd(deps.pool, counted, open.upto, open.after, CHUNK);
      const chunk = { since: counted, upto: open.upto, after: open.after, through };
      const [counts, buckets] = await Promise.all([
        countTransitions(deps.pool, chunk),
        findCompletionLatencyBuckets(deps.pool, chunk, COMPLETION_BUCKETS),
      ]);
      // Applied only when both reads of the chunk succeeded: a chunk counts once or not at all.
      for (const c of counts) transitions.inc({ event: c.event, to_status: c.toStatus }, c.count);
      for (const b of buckets) observeBucket(completion, b);
      if (through) open = { upto: open.upto, after: through };
      else {
        counted = open.upto;
        open = undefined;
      }
    }
  }
  return sync;
}

/**
 * Adds a bucket's flows to the histogram exactly: each is observed at the
 * bucket's mean, which lies inside the bucket, so bucket counts, _count and
 * _sum all match the individual values (prom-client has no weighted observe).
 */
function observeBucket(histogram: Histogram, b: LatencyBucket): void {
  const upper = COMPLETION_BUCKETS[b.bucket];
  const lower = b.bucket === 0 ? -Infinity : (COMPLETION_BUCKETS[b.bucket - 1] ?? Infinity);
  let value = b.sumSeconds / b.count;
  // Rounding may nudge the mean across a bound; keep it inside (lower, upper].
  if (upper !== undefined && value > upper) value = upper;
  if (value <= lower) value = upper ?? lower + 1e-6;
  for (let i = 0; i < b.count; i++) histogram.observe(value);
}
