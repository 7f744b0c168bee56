import { insertNavigation } from '../src/broker/navigationRepo.js';
import type { Pool } from '../src/db/pool.js';
import { withTransaction } from '../src/db/transaction.js';
import { appendEntry } from '../src/ledger/ledgerRepo.js';
import { navigationFixture } from '../test/support/navigationFixture.js';
import { median } from './ledgerCases.js';

// Ledger appends per second at N concurrent writers. Each writer loops on
// transactions that append one entry through appendEntry (as
// recordWithoutMoving does) to flows of its own, round robin, so what writers
// share is the ledger and nothing else. Two shapes of transaction: the append
// alone, and the append followed by `holdMs` more work before COMMIT (a
// transition's transaction goes on after its ledger entry: tokens, receipts),
// which is what a lock held from the append to the commit makes everyone wait for.

export interface AppendShape {
  name: string;
  /** Milliseconds the transaction goes on after its append (pg_sleep), 0 for none. */
  holdMs: number;
}

export const APPEND_SHAPES: AppendShape[] = [
  { name: 'append, commit', holdMs: 0 },
  { name: 'append, 2 ms more work, commit', holdMs: 2 },
];

const FLOWS_PER_WRITER = 4;

export interface AppendRun {
  writers: number;
  shape: string;
  appends: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** Flows for `writers` writers, FLOWS_PER_WRITER each, inserted as the broker does. */
export async function seedAppendFlows(pool: Pool, writers: number): Promise<string[][]> {
  const flows: string[][] = [];
  for (let w = 0; w < writers; w++) {
    const own: string[] = [];
    for (let f = 0; f < FLOWS_PER_WRITER; f++) {
      const n = navigationFixture('CREATED', { subject: { iss: 'https://idp.test', sub: `writer-${w}` } });
      await insertNavigation(pool, n);
      own.push(n.id);
    }
    flows.push(own);
  }
  return flows;
}

/** Runs `flows.length` writers for the warm-up, then counts their commits for `seconds`. */
export async function measureAppends(
  pool: Pool,
  flows: string[][],
  shape: AppendShape,
  seconds: number,
  warmupSeconds: number,
): Promise<AppendRun> {
  const started = performance.now();
  const measureFrom = started + warmupSeconds * 1000;
  const until = measureFrom + seconds * 1000;
  const latencies: number[] = [];
  const writer = async (own: string[]) => {
    for (let i = 0; performance.now() < until; i++) {
      const t = performance.now();
      await withTransaction(pool, async (tx) => {
        await appendEntry(tx, {
          navigationId: own[i % own.length]!,
          fromStatus: 'CREATED',
          toStatus: 'CREATED',
          event: 'bench_append',
          actor: 'system:bench',
          evidence: { i },
          at: new Date(),
        });
        if (shape.holdMs > 0) await tx.query('SELECT pg_sleep($1)', [shape.holdMs / 1000]);
      });
      const done = performance.now();
      if (t >= measureFrom && done <= until) latencies.push(done - t);
    }
  };
  await Promise.all(flows.map((own) => writer(own)));
  const sorted = latencies.sort((a, b) => a - b);
  return {
    writers: flows.length,
    shape: shape.name,
    appends: sorted.length,
    seconds,
    perSecond: sorted.length / seconds,
    p50Ms: median(sorted),
    p99Ms: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? NaN,
  };
}
