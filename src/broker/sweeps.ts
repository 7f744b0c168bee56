import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import { advance } from './advance.js';
import { lockOverdueNavigations } from './navigationRepo.js';
import { deleteExpiredRows, type SweptRows } from './sweepRepo.js';

const EXPIRE_PER_TRANSACTION = 10;

export interface SweepDeps {
  pool: Pool;
  clock: Clock;
  logger: Logger;
  /** Told of every sweep's result, or that it failed (metrics). */
  onSweep?: (result: SweepResult) => void;
  onSweepFailed?: () => void;
  /** Re-drives accepted operations whose outcome is unknown (bounded); absent, outcomes are only listed by `ledger reconcile`. */
  reconcile?: (batch: number) => Promise<{ redriven: number; waiting: number }>;
}

export interface SweepResult extends SweptRows {
  expiredNavigations: number;
  /** Accepted operations performed again with their idempotency key, and those that could not be yet. */
  redrivenOperations: number;
  redriveWaiting: number;
}

/**
 * One bounded sweep (issue #6 item 7), safe on every instance at once: overdue
 * navigations move to EXPIRED through the transition table (each with its
 * ledger entry, rows taken with SKIP LOCKED), then unusable rows are deleted.
 */
export async function sweepOnce(deps: SweepDeps, batch = 100): Promise<SweepResult> {
  try {
    const result = await sweepBatch(deps, batch);
    deps.onSweep?.(result);
    return result;
  } catch (err) {
    deps.onSweepFailed?.();
    throw err;
  }
}

async function sweepBatch(deps: SweepDeps, batch: number): Promise<SweepResult> {
  const now = deps.clock.now();
  // Small transactions: every ledger write holds the chain's lock until commit, so a long sweep
  // transaction would hold up every live flow's next step (bench:ledger: ~100 ms per 100 rows).
  let expiredNavigations = 0;
  while (expiredNavigations < batch) {
    const expired = await withTransaction(deps.pool, async (tx) => {
      const overdue = await lockOverdueNavigations(tx, now, Math.min(EXPIRE_PER_TRANSACTION, batch - expiredNavigations));
      for (const navigation of overdue) await advance(tx, navigation, 'expire', { actor: 'system:sweep', now, evidence: { expiresAt: navigation.expiresAt.toISOString() } });
      return overdue.length;
    });
    expiredNavigations += expired;
    if (expired === 0) break;
  }
  const rows = await deleteExpiredRows(deps.pool, now, batch);
  const reconciled = deps.reconcile ? await deps.reconcile(Math.min(batch, 20)) : { redriven: 0, waiting: 0 };
  const result = { expiredNavigations, ...rows, redrivenOperations: reconciled.redriven, redriveWaiting: reconciled.waiting };
  if (Object.values(result).some((n) => n > 0)) deps.logger.info({ sweep: result }, 'sweep');
  return result;
}

/** Sweeps every `intervalMs` (with jitter, so instances spread out) until stopped. */
export function startSweeper(deps: SweepDeps, intervalMs: number): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sweepOnce(deps)
        .catch((err: unknown) => deps.logger.warn({ err }, 'sweep failed; the next one retries'))
        .finally(schedule);
    }, intervalMs * (0.75 + Math.random() * 0.5));
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
