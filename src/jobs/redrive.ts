import { MissingKeyError } from '../crypto/secretBox.js';
import { withTransaction } from '../db/transaction.js';
import type { WebhookEvent } from '../events/webhookEvent.js';
import { enqueueEvent } from '../events/webhookOutboxRepo.js';
import { performOrForget, type StoredAccess } from '../broker/forgetConnection.js';
import { accessTokenForConnection, type TokenVaultDeps } from '../secrets/tokenVault.js';
import { findConnectionById, findDefaultConnection } from '../secrets/connectionsRepo.js';
import { findReceiptConnection } from '../broker/receiptConnectionRepo.js';
import {
  argumentsAad,
  PerformInProgressError,
  runAcceptedOperation,
  type BusinessOutcome,
} from '../broker/acceptOriginalOperation.js';
import { recordWithoutMoving } from '../broker/advance.js';
import type { BrokerDeps } from '../broker/brokerDeps.js';
import { findNavigationById } from '../broker/navigationRepo.js';
import { latestEventOf } from '../ledger/ledgerRepo.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import {
  findSealedArguments,
  holdRedrive,
  leaseDueReceipts,
  recordUnansweredInput,
  resultDigestOf,
  type OperationReceipt,
} from '../broker/receiptRepo.js';

/** An operation rebuilt from its tool name and kept arguments (the MCP tools supply these). */
export interface ReplayableOperation {
  provider: string;
  requestDigest: string;
  /**
   * Whether the provider dedupes by the idempotency key, so an unknown outcome may be performed
   * again on its own. Otherwise only an operator's explicit re-drive performs it, once per request.
   */
  replayable: boolean;
  perform(access: StoredAccess, idempotencyKey: string): Promise<BusinessOutcome>;
}

export interface RedriveDeps {
  broker: BrokerDeps;
  vault: TokenVaultDeps;
  /** Rebuilds an operation; undefined for a tool that has none. */
  operationFor(tool: string, args: unknown): ReplayableOperation | undefined;
}

const LEASE_MS = 2 * 60_000;

/**
 * Performs an accepted operation whose outcome is unknown again, with its
 * receipt id as the idempotency key, and records the outcome once (an
 * operator's re-drive, or the reconcile sweep). Returns undefined when it cannot be done now (no kept
 * arguments, no connection); the receipt then stays pending and is listed by
 * `broker ledger reconcile`.
 */
export async function redrive(
  deps: RedriveDeps,
  receipt: OperationReceipt,
  actor: string,
): Promise<BusinessOutcome | undefined> {
  const { broker } = deps;
  const navigation = await findNavigationById(broker.pool, receipt.navigationId);
  const sealed = await findSealedArguments(broker.pool, receipt.id);
  if (!navigation || !sealed) return undefined;
  let args: unknown;
  try {
    args = JSON.parse(broker.box.open(sealed, argumentsAad(receipt.operationKey)));
  } catch (err) {
    if (!(err instanceof MissingKeyError)) throw err;
    await withholdUnopenable(deps, navigation, receipt, err.keyId, actor);
    return undefined;
  }
  const operation = deps.operationFor(navigation.tool, args);
  // The kept arguments must be the ones the flow was started for.
  if (!operation || operation.requestDigest !== navigation.requestDigest) {
    broker.logger.error(
      { receiptId: receipt.id, tool: navigation.tool },
      'kept arguments do not rebuild the accepted operation; not re-driven',
    );
    return undefined;
  }
  // The provider asked a question nobody answered in time: nothing was done, so nothing is performed.
  if (receipt.awaitingInputUntil !== undefined) return closeUnanswered(deps, navigation, receipt);
  if (!operation.replayable && !(await operatorAskedForIt(deps, navigation, receipt))) return undefined;
  // Through the connection the receipt names (several accounts at a provider), else the user's default.
  const recorded = await findReceiptConnection(broker.pool, receipt.id);
  const connection = recorded
    ? await findConnectionById(broker.pool, recorded)
    : await findDefaultConnection(broker.pool, navigation.subject, operation.provider);
  const token = connection && (await accessTokenForConnection(deps.vault, connection.id));
  if (!connection || !token) {
    broker.logger.warn(
      { receiptId: receipt.id, provider: operation.provider },
      're-drive waits: the user has no connection to the provider any more',
    );
    return undefined;
  }
  let outcome: BusinessOutcome;
  try {
    // No wait: a request performing it right now records the outcome itself. A 401 forgets the
    // token and is recorded as the final outcome, so the user's reconnect never re-drives it.
    outcome = await runAcceptedOperation(
      broker,
      receipt,
      (key) => performOrForget(deps.vault, { token, connection }, (live) => operation.perform(live, key)),
      0,
      // Only an operator's request (or a provider that dedupes) gets here: an unknown outcome is performed again.
      true,
    );
  } catch (err) {
    if (err instanceof PerformInProgressError) return undefined;
    throw err;
  }
  await withTransaction(broker.pool, async (tx) => {
    await recordWithoutMoving(tx, navigation, 'outcome_redriven', {
      actor,
      now: broker.clock.now(),
      evidence: { receiptId: receipt.id, status: outcome.status },
    });
  });
  return outcome;
}

/**
 * Records the outcome of an operation whose provider asked the host for more input and was never
 * answered (its question's state has expired): failed, nothing done, and the ledger says so. Undefined
 * when it is not (yet) that: still within its time, or answered and being performed meanwhile.
 */
async function closeUnanswered(
  deps: RedriveDeps,
  navigation: NavigationRecord,
  receipt: OperationReceipt,
): Promise<BusinessOutcome | undefined> {
  const { broker } = deps;
  const now = broker.clock.now();
  if (receipt.awaitingInputUntil! > now) return undefined;
  const outcome: BusinessOutcome = {
    status: 'failed',
    outcome: {
      error: 'input_not_answered',
      message:
        'The service asked for more input for this operation, which was not answered before the question expired; nothing was done. Call the tool again to start over.',
    },
  };
  const closed = await withTransaction(broker.pool, async (tx) => {
    if (!(await recordUnansweredInput(tx, receipt.id, outcome.outcome, resultDigestOf(outcome.outcome), now)))
      return false;
    await recordWithoutMoving(tx, navigation, 'input_unanswered', {
      actor: 'system:reconcile',
      now,
      evidence: { receiptId: receipt.id },
    });
    return true;
  });
  // The receipt's update woke identical calls waiting on this operation (migrations/0023_wake_waiters.sql):
  // they read the recorded outcome.
  return closed ? outcome : undefined;
}

/**
 * For an operation the provider cannot dedupe: true when an operator's re-drive is the latest
 * decision on it, and then that request is used up (one attempt, whatever its end). Otherwise the
 * receipt is held out of the automatic sweep and the ledger says so, once: a reconciliation
 * finding (`broker ledger reconcile`) until an operator decides.
 */
async function operatorAskedForIt(
  deps: RedriveDeps,
  navigation: NavigationRecord,
  receipt: OperationReceipt,
): Promise<boolean> {
  const { broker } = deps;
  return withTransaction(broker.pool, async (tx) => {
    const latest = await latestEventOf(tx, navigation.id, REDRIVE_DECISIONS);
    const asked = latest === 'operator_redrive';
    await holdRedrive(tx, receipt.id);
    if (asked || latest !== 'redrive_withheld') {
      const event = asked ? 'redrive_attempted' : 'redrive_withheld';
      const evidence = {
        receiptId: receipt.id,
        ...(asked
          ? {}
          : { reason: 'the provider cannot dedupe this operation: an operator decides whether to perform it again' }),
      };
      await recordWithoutMoving(tx, navigation, event, {
        actor: 'system:reconcile',
        now: broker.clock.now(),
        evidence,
      });
      if (!asked) await enqueueEvent(tx, needsOperator(navigation, receipt, 'not_replayable', broker.clock.now()));
    }
    return asked;
  });
}

const REDRIVE_DECISIONS = ['operator_redrive', 'redrive_attempted', 'redrive_withheld'];

/** The webhook event of a withheld re-drive (`reason`: why only an operator can settle it). */
const needsOperator = (
  navigation: NavigationRecord,
  receipt: OperationReceipt,
  reason: string,
  occurredAt: Date,
): WebhookEvent & { occurredAt: Date } => ({
  type: 'operation.needs_operator',
  data: {
    receiptId: receipt.id,
    navigationId: navigation.id,
    tool: navigation.tool,
    provider: navigation.provider,
    reason,
  },
  occurredAt,
});

/**
 * The kept arguments were sealed under a key SECRET_KEYS no longer holds, so nothing can perform the
 * operation again: the receipt is held out of the automatic sweep and the ledger says it needs an
 * operator (configure the key again and re-drive, or close the flow), once per decision.
 */
async function withholdUnopenable(
  deps: RedriveDeps,
  navigation: NavigationRecord,
  receipt: OperationReceipt,
  keyId: string,
  actor: string,
): Promise<void> {
  const { broker } = deps;
  broker.logger.warn(
    { receiptId: receipt.id, keyId },
    'kept arguments are sealed under a key SECRET_KEYS no longer holds; an operator decides',
  );
  await withTransaction(broker.pool, async (tx) => {
    await holdRedrive(tx, receipt.id);
    if ((await latestEventOf(tx, navigation.id, REDRIVE_DECISIONS)) === 'redrive_withheld') return;
    await recordWithoutMoving(tx, navigation, 'redrive_withheld', {
      actor,
      now: broker.clock.now(),
      evidence: {
        receiptId: receipt.id,
        keyId,
        reason: `the kept arguments are sealed under key ${keyId}, which SECRET_KEYS no longer holds: an operator decides (configure the key again and re-drive, or close the flow)`,
      },
    });
    await enqueueEvent(tx, needsOperator(navigation, receipt, 'key_missing', broker.clock.now()));
  });
}

/**
 * The reconcile sweep: re-drives, in a bounded batch, the pending receipts an
 * operator asked for and those older than `graceMs` (a crash between receipt
 * and business call). Leased so instances do not take the same one at once.
 */
export async function reconcileOutcomes(
  deps: RedriveDeps,
  graceMs: number,
  batch: number,
): Promise<{ redriven: number; waiting: number }> {
  const now = deps.broker.clock.now();
  const due = await leaseDueReceipts(
    deps.broker.pool,
    now,
    new Date(now.getTime() - graceMs),
    new Date(now.getTime() + LEASE_MS),
    batch,
  );
  let redriven = 0;
  for (const receipt of due) {
    try {
      if (await redrive(deps, receipt, 'system:reconcile')) redriven += 1;
    } catch (err) {
      deps.broker.logger.warn(
        { err, receiptId: receipt.id },
        're-drive failed; the next sweep after the lease tries again',
      );
    }
  }
  return { redriven, waiting: due.length - redriven };
}
