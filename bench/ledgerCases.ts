import type { Queryable } from '../src/db/pool.js';
import {
  findFlowDetail,
  findFlows,
  findGateFigures,
  findReconcileFindings,
  findStuckFlows,
  type FlowFilters,
} from '../src/ledger/ledgerQueriesRepo.js';
import { verifyChain } from '../src/ledger/chainVerifyRepo.js';

// What the ledger bench measures: the operators' questions with the
// parameters the CLI would pass (limit 50, grace 300 s).

export interface LedgerCase {
  name: string;
  /** A single-flow lookup: its plans must not scan a table sequentially. */
  singleFlow: boolean;
  /** Runs the question once; returns how many rows (or findings) it answered with. */
  run(db: Queryable, i: number): Promise<number>;
}

const LIMIT = 50;
const GRACE_SECONDS = 300;

export interface CaseInputs {
  now: Date;
  /** Flows to look up one at a time (the i-th run looks up ids[i % length]). */
  detailIds: string[];
  subject: string;
}

export function ledgerCases(inputs: CaseInputs): LedgerCase[] {
  const { now } = inputs;
  const flows = (name: string, filters: Omit<FlowFilters, 'limit'>): LedgerCase => ({
    name: `findFlows ${name}`,
    singleFlow: false,
    run: async (db) => (await findFlows(db, { ...filters, limit: LIMIT }, now)).length,
  });
  return [
    flows('(no filter)', {}),
    flows('state=EXPIRED', { state: 'EXPIRED' }),
    flows('state=OUT_OF_BAND_PENDING', { state: 'OUT_OF_BAND_PENDING' }),
    flows('lineage=nested', { lineage: 'nested' }),
    flows(`subject=${inputs.subject}`, { subject: inputs.subject }),
    flows('provider=drive', { provider: 'drive' }),
    flows('tool=calendar_list_events', { tool: 'calendar_list_events' }),
    flows('older-than=7d', { olderThanSeconds: 7 * 86400 }),
    {
      name: 'findFlowDetail',
      singleFlow: true,
      run: async (db, i) => {
        const detail = await findFlowDetail(db, inputs.detailIds[i % inputs.detailIds.length]!);
        if (!detail) throw new Error('findFlowDetail found no flow');
        return detail.events.length;
      },
    },
    { name: 'findStuckFlows', singleFlow: false, run: async (db) => (await findStuckFlows(db, now, LIMIT)).length },
    {
      name: 'findReconcileFindings',
      singleFlow: false,
      run: async (db) => (await findReconcileFindings(db, now, GRACE_SECONDS)).length,
    },
    {
      name: 'findGateFigures',
      singleFlow: false,
      run: async (db) => (await findGateFigures(db)).completionToVerified.count,
    },
  ];
}

/** Run after the sweep, so the chain it checks ends in rows the trigger appended to the bulk-seeded ones. */
export const chainCase: LedgerCase = {
  name: 'verifyChain (after the sweep)',
  singleFlow: false,
  run: async (db) => {
    const result = await verifyChain(db);
    if (result.firstBreak) throw new Error(`verifyChain: the chain is broken at ${JSON.stringify(result.firstBreak)}`);
    return result.rows;
  },
};

export interface Timing {
  runs: number;
  medianMs: number;
  maxMs: number;
  rows: number;
}

/** One warm-up run, then 5 runs (3 if they are slow; 1 if a run takes over 10 s). */
export async function time(run: (i: number) => Promise<number>): Promise<Timing> {
  let t = performance.now();
  await run(0);
  const warmMs = performance.now() - t;
  const target = warmMs > 10_000 ? 1 : warmMs > 2_000 ? 3 : 5;
  const samples: number[] = [];
  let rows = 0;
  for (let i = 1; i <= target; i++) {
    t = performance.now();
    rows = await run(i);
    samples.push(performance.now() - t);
  }
  return { runs: samples.length, medianMs: median(samples), maxMs: Math.max(...samples), rows };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
