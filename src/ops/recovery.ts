import { withTransaction } from '../db/transaction.js';
import { ConflictError, NotFoundError } from '../errors/appError.js';
import type { Principal } from '../auth/principal.js';
import { recordOperatorAction } from '../ledger/operatorRepo.js';
import { advance, recordWithoutMoving } from '../broker/advance.js';
import type { BrokerDeps } from '../broker/brokerDeps.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { findNavigationById, findReissueOf, lockNavigation } from '../broker/navigationRepo.js';
import { canTransition, openStates, State } from '../flow/navigationStates.js';
import {
  findReceiptById,
  findReceiptByNavigation,
  findSealedArguments,
  markRedriveDue,
  type OperationReceipt,
} from '../broker/receiptRepo.js';
import { startNavigation } from '../broker/startNavigation.js';

// Operators' recovery actions. Each needs a reason and an
// actor, moves flows only through the transition table, and is written to the
// ledger (navigation_events) and to operator_actions.

export interface OperatorAct {
  reason: string;
  /** e.g. operator:<sub> (pages) or cli:<sub> (CLI). */
  actor: string;
  /** The operator's identity. */
  subject: Principal;
}

/** Marks a flow nobody will finish as terminal (EXPIRED by `operator_close`). */
export async function markTerminal(
  deps: BrokerDeps,
  navigationId: string,
  act: OperatorAct,
): Promise<NavigationRecord> {
  return withTransaction(deps.pool, async (tx) => {
    const now = deps.clock.now();
    const navigation = await lockNavigation(tx, navigationId);
    if (!navigation) throw new NotFoundError(`No flow ${navigationId}.`);
    if (!canTransition(navigation.status, 'operator_close')) {
      throw new ConflictError(
        `A ${navigation.status} flow cannot be marked terminal: only a flow still waiting for the user or the provider can.`,
      );
    }
    const closed = await advance(tx, navigation, 'operator_close', {
      actor: act.actor,
      now,
      evidence: { reason: act.reason },
    });
    await recordOperatorAction(tx, 'mark_terminal', act.reason, act.actor, { navigationId }, now);
    return closed;
  });
}

/**
 * Re-issues the connect link of an expired flow, or of a stuck one (open past
 * its expiry, which is closed first): a new navigation in the same lineage for
 * the same subject and operation, naming the one it replaces. The operator
 * hands the link to the user; the host's retry of the original call follows
 * the re-issue, so the operation is still accepted once.
 */
export async function reissueLink(
  deps: BrokerDeps,
  navigationId: string,
  act: OperatorAct,
): Promise<{ navigation: NavigationRecord; connectUrl: string }> {
  let old = await findNavigationById(deps.pool, navigationId);
  if (!old) throw new NotFoundError(`No flow ${navigationId}.`);
  const successor = await findReissueOf(deps.pool, navigationId);
  if (successor)
    throw new ConflictError(`Flow ${navigationId} was already re-issued as ${successor.id}; act on that one.`);
  if (openStates.has(old.status) && old.expiresAt <= deps.clock.now())
    old = await markTerminal(deps, navigationId, act);
  if (old.status !== State.EXPIRED)
    throw new ConflictError(
      `Only an expired or stuck flow can be re-issued; this one is ${old.status}${openStates.has(old.status) ? ` until ${old.expiresAt.toISOString()}` : ''}.`,
    );
  if (await findReceiptByNavigation(deps.pool, navigationId))
    throw new ConflictError("This flow's operation was already accepted; there is nothing to re-issue.");
  const fresh = await startNavigation(deps, {
    principal: old.subject,
    clientId: old.clientId,
    tool: old.tool,
    requestDigest: old.requestDigest,
    provider: old.provider,
    purpose: old.purpose,
    lineage: old.lineage,
    reissue: {
      from: old.id,
      actor: act.actor,
      reason: act.reason,
      destination: { scheme: old.targetScheme, host: old.targetHost },
    },
  });
  await withTransaction(deps.pool, async (tx) => {
    const now = deps.clock.now();
    await recordWithoutMoving(tx, old, 'operator_reissued', {
      actor: act.actor,
      now,
      evidence: { reason: act.reason, newNavigationId: fresh.navigation.id },
    });
    await recordOperatorAction(
      tx,
      'reissue_link',
      act.reason,
      act.actor,
      { navigationId, newNavigationId: fresh.navigation.id },
      now,
    );
  });
  return fresh;
}

/**
 * Asks for an accepted operation whose outcome is unknown to be performed
 * again, with the same idempotency key (the receipt id), so the provider does
 * it at most once. `id` is the receipt's or its flow's. The re-drive itself is
 * done by `redriveNow` (pages) or the next reconcile sweep on any instance (CLI).
 */
export async function requestRedrive(deps: BrokerDeps, id: string, act: OperatorAct): Promise<OperationReceipt> {
  const receipt = (await findReceiptById(deps.pool, id)) ?? (await findReceiptByNavigation(deps.pool, id));
  if (!receipt) throw new NotFoundError(`No accepted operation ${id} (give a receipt id or its flow's id).`);
  if (receipt.outcomeStatus !== 'pending')
    throw new ConflictError(
      `This operation already has its outcome (${receipt.outcomeStatus}); re-driving it would change nothing.`,
    );
  if (!(await findSealedArguments(deps.pool, receipt.id)))
    throw new ConflictError(
      'This operation was accepted before its arguments were kept; it cannot be re-driven. The user can call the tool again (same arguments) to finish it.',
    );
  await withTransaction(deps.pool, async (tx) => {
    const now = deps.clock.now();
    const navigation = await lockNavigation(tx, receipt.navigationId);
    if (!(await markRedriveDue(tx, receipt.id, now)))
      throw new ConflictError('This operation got its outcome meanwhile.');
    await recordWithoutMoving(tx, navigation!, 'operator_redrive', {
      actor: act.actor,
      now,
      evidence: { reason: act.reason, receiptId: receipt.id },
    });
    await recordOperatorAction(
      tx,
      'redrive_operation',
      act.reason,
      act.actor,
      { receiptId: receipt.id, navigationId: receipt.navigationId },
      now,
    );
  });
  return receipt;
}
