import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import {
  deletePendingAuthorizations,
  lockSwitchExclusive,
  recordOperatorAction,
  setSwitch,
  URL_ELICITATION_PAUSED,
} from './operatorRepo.js';

/**
 * The rollback switch: stop issuing URL elicitations and revoke every
 * pending OAuth transaction, in one transaction with the operator's reason.
 * Flows already at the provider are not declared failed or succeeded: their
 * callbacks find no transaction, and the flows stay where they are.
 */
export async function pauseConnections(
  pool: Pool,
  reason: string,
  actor: string,
  now: Date,
): Promise<{ revokedTransactions: number }> {
  return withTransaction(pool, async (tx) => {
    await lockSwitchExclusive(tx, URL_ELICITATION_PAUSED);
    await setSwitch(tx, URL_ELICITATION_PAUSED, true, reason, actor, now);
    const revokedTransactions = await deletePendingAuthorizations(tx);
    await recordOperatorAction(tx, 'pause_connections', reason, actor, { revokedTransactions }, now);
    return { revokedTransactions };
  });
}

export async function resumeConnections(pool: Pool, reason: string, actor: string, now: Date): Promise<void> {
  await withTransaction(pool, async (tx) => {
    await setSwitch(tx, URL_ELICITATION_PAUSED, false, reason, actor, now);
    await recordOperatorAction(tx, 'resume_connections', reason, actor, {}, now);
  });
}
