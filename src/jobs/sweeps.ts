import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import { advance } from '../broker/advance.js';
import { lockOverdueNavigations } from '../broker/navigationRepo.js';
import { writeAnchor } from '../ledger/anchorRepo.js';
import { startPeriodic } from '../shared/periodic.js';
import { deleteExpiredBatch, sweptTables, type SweptRows } from './sweepRepo.js';
import { reachFaultPoint } from '../shared/faultPoints.js';

const EXPIRE_PER_TRANSACTION = 10;

export interface SweepLimits {
  /** Rows deleted per statement (each its own short transaction). */
  batch?: number;
  /** Wall-clock time one sweep may spend before it leaves the rest to the next. */
  budgetMs?: number;
}

const DEFAULT_LIMITS = { batch: 500, budgetMs: 5_000 };

export interface SweepDeps {
  pool: Pool;
  clock: Clock;
  logger: Logger;
  /** Told of every sweep's result, or that it failed (metrics). */
  onSweep?: (result: SweepResult) => void;
  onSweepFailed?: () => void;
  /** Re-drives accepted operations whose outcome is unknown (bounded); absent, outcomes are only listed by `ledger reconcile`. */
  reconcile?: (batch: number) => Promise<{ redriven: number; waiting: number }>;
  /** Moves values at rest sealed under an older key to the active one while `inBudget` holds (reseal.ts). */
  reseal?: (inBudget: () => boolean) => Promise<{ resealed: number }>;
}

export interface SweepResult extends SweptRows {
  expiredNavigations: number;
  /** Accepted operations performed again with their idempotency key, and those that could not be yet. */
  redrivenOperations: number;
  redriveWaiting: number;
  /** Values at rest moved from an older key to the active one. */
  resealedValues: number;
  /** Ledger anchors written (1 when there were events to seal and no other instance was sealing them). */
  ledgerAnchors: number;
}

/**
 * One sweep, safe on every instance at once: overdue navigations move to
 * EXPIRED through the transition table (each with its ledger entry, rows
 * taken with SKIP LOCKED), then unusable rows are deleted, each step in its
 * own small transaction, until nothing is left or the time budget is spent
 * (a backlog of any size drains at thousands of rows a second, not 100 a
 * minute, and no step holds locks for long). Then the reconcile sweep and,
 * after a key rotation, the re-seal of values under older keys, as far as the
 * budget goes. Last, whatever the budget, an anchor seals the ledger's events
 * committed since the last one (theirs included).
 */
export async function sweepOnce(deps: SweepDeps, limits: SweepLimits = {}): Promise<SweepResult> {
  try {
    const result = await sweepWithin(deps, { ...DEFAULT_LIMITS, ...limits });
    deps.onSweep?.(result);
    return result;
  } catch (err) {
    deps.onSweepFailed?.();
    throw err;
  }
}

async function sweepWithin(deps: SweepDeps, { batch, budgetMs }: Required<SweepLimits>): Promise<SweepResult> {
  const now = deps.clock.now();
  const deadline = performance.now() + budgetMs;
  const inBudget = () => performance.now() < deadline;
  // Small transactions: a locked overdue flow (and its ledger chain) waits until commit, so a long
  // sweep transaction would hold up those flows' next steps (bench:ledger: ~100 ms per 100 rows).
  let expiredNavigations = 0;
  do {
    const expired = await withTransaction(deps.pool, async (tx) => {
      const overdue = await lockOverdueNavigations(tx, now, EXPIRE_PER_TRANSACTION);
      for (const navigation of overdue)
        await advance(tx, navigation, 'expire', {
          actor: 'system:sweep',
          now,
          evidence: { expiresAt: navigation.expiresAt.toISOString() },
        });
      if (overdue.length > 0) reachFaultPoint('sweep.before_commit');
      return overdue.length;
    });
    expiredNavigations += expired;
    if (expired < EXPIRE_PER_TRANSACTION) break;
  } while (inBudget());
  const rows: SweptRows = { oauthTransactions: 0, nonces: 0, sessions: 0, webhookEvents: 0 };
  for (const kind of Object.keys(sweptTables) as (keyof SweptRows)[]) {
    // At least one batch per table, so a slow first step cannot starve the tables after it.
    for (;;) {
      const deleted = await deleteExpiredBatch(deps.pool, kind, now, batch);
      rows[kind] += deleted;
      if (deleted < batch || !inBudget()) break;
    }
  }
  const reconciled = deps.reconcile && inBudget() ? await deps.reconcile(20) : { redriven: 0, waiting: 0 };
  const resealed = deps.reseal && inBudget() ? await deps.reseal(inBudget) : { resealed: 0 };
  const anchor = await writeAnchor(deps.pool, deps.clock.now());
  const result = {
    expiredNavigations,
    ...rows,
    redrivenOperations: reconciled.redriven,
    redriveWaiting: reconciled.waiting,
    resealedValues: resealed.resealed,
    ledgerAnchors: anchor === undefined ? 0 : 1,
  };
  if (Object.values(result).some((n) => n > 0)) deps.logger.info({ sweep: result }, 'sweep');
  return result;
}

/** Sweeps every `intervalMs` (with jitter, so instances spread out) until stopped. */
export function startSweeper(deps: SweepDeps, intervalMs: number): { stop(): Promise<void> } {
  return startPeriodic(() => sweepOnce(deps), intervalMs, deps.logger, 'sweep');
}
