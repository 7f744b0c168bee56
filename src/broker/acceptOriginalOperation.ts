import { createHash, randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { samePrincipal } from '../auth/principal.js';
import type { Queryable } from '../db/pool.js';
import { isUniqueViolation } from '../db/connectionLoss.js';
import { withTransaction } from '../db/transaction.js';
import { ConflictError, ForbiddenError, NotFoundError, UnavailableError } from '../errors/appError.js';
import { advance, advanceUnlessMoved } from './advance.js';
import { isApproved } from './approvals.js';
import type { BrokerDeps } from './brokerDeps.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import type { Lineage } from '../flow/navigationStates.js';
import { lockNavigation } from './navigationRepo.js';
import { acceptEvents, State } from '../flow/navigationStates.js';
import {
  awaitHostInput,
  extendPerformLease,
  findReceiptById,
  findReceiptByKey,
  insertedReceipt,
  insertReceiptOnce,
  receiptInsertAlongside,
  markOutcomeUnknown,
  recordOutcome,
  releasePerformLease,
  resultDigestOf,
  takePerformLease,
  type NewReceipt,
  type OperationReceipt,
} from './receiptRepo.js';
import { reachFaultPoint } from '../shared/faultPoints.js';
import { inSpan, markRequest } from '../telemetry/spans.js';
import { parseTraceparent } from '../telemetry/traceContext.js';

export interface OriginalOperation {
  navigationId: string;
  principal: Principal;
  tool: string;
  requestDigest: string;
  lineage: Lineage;
  /** nested lineage: the original JSON-RPC id. */
  jsonrpcId?: string;
  /** -32042 lineage: the retry generation. */
  retryGeneration?: number;
  /** The operation's parsed arguments, kept sealed so an unknown outcome can be re-driven (jobs/redrive.ts). */
  arguments: Record<string, unknown>;
  /** The OAuth client the principal calls through: only the client that started a flow finishes its operation. */
  clientId: string | undefined;
}

/** The additional data binding an operation's sealed arguments to its receipt. */
export const argumentsAad = (operationKey: string): string => `operation-arguments\n${operationKey}`;

/** The key that makes an acceptance unique across lineages and instances (UNIQUE in operation_receipts). */
export function operationKey(
  op: Pick<OriginalOperation, 'principal' | 'tool' | 'requestDigest' | 'navigationId'>,
): string {
  return createHash('sha256')
    .update(JSON.stringify([op.principal.iss, op.principal.sub, op.tool, op.requestDigest, op.navigationId]))
    .digest('hex');
}

/**
 * The single point where an original operation is accepted (docs/architecture.md). In
 * one transaction: the navigation, locked, must be REQUIREMENT_VERIFIED for
 * this principal and this operation; the receipt is inserted under its unique
 * key; the navigation moves to the lineage's accepted state with its ledger
 * entry. A second attempt, from any lineage or instance, finds the receipt.
 * `seen`, the navigation as the caller read it: seen verified, it is checked as the locked row
 * would be (only its status can change, and the compare-and-set checks that) and moved first, by
 * the compare-and-set that holds its row from then on as the lock would; moved meanwhile, it is
 * locked and decided on again.
 */
export function acceptOriginalOperation(
  deps: BrokerDeps,
  op: OriginalOperation,
  seen?: NavigationRecord,
): Promise<{ receipt: OperationReceipt; created: boolean }> {
  markRequest({ 'broker.lineage': op.lineage, 'broker.navigation.id': op.navigationId });
  // The retry that accepts is the host's request, in its own trace: linked to the flow's, where it began.
  const flow = parseTraceparent(seen?.traceParent);
  const attributes = { 'broker.lineage': op.lineage, 'broker.navigation.id': op.navigationId, 'broker.tool': op.tool };
  return inSpan(
    'broker acceptOriginalOperation',
    attributes,
    async (span) => {
      const accepted = await acceptOnce(deps, op, seen);
      span.setAttribute('broker.receipt.created', accepted.created);
      return accepted;
    },
    flow ? { links: [{ context: flow }] } : {},
  );
}

async function acceptOnce(
  deps: BrokerDeps,
  op: OriginalOperation,
  seen: NavigationRecord | undefined,
): Promise<{ receipt: OperationReceipt; created: boolean }> {
  const key = operationKey(op);
  if (seen?.id === op.navigationId && seen.status === State.REQUIREMENT_VERIFIED) {
    const accepted = await acceptSeenVerified(deps, op, key, seen).catch((err: unknown) => {
      // A receipt under the key already: the statement did nothing, and the lock decides.
      if (isUniqueViolation(err)) return undefined;
      throw err;
    });
    if (accepted) return accepted;
  }
  return withTransaction(deps.pool, async (tx) => {
    const navigation = await lockNavigation(tx, op.navigationId);
    if (!navigation) throw new NotFoundError('This connection flow is not known.');
    checkOperation(navigation, op);
    // A receipt and its flow's move past REQUIREMENT_VERIFIED commit together: a flow locked there has
    // none yet (insertReceiptOnce finds it all the same), so only another state needs to look one up.
    if (navigation.status !== State.REQUIREMENT_VERIFIED) {
      const existing = await findReceiptByKey(tx, key);
      if (existing) return { receipt: existing, created: false };
      throw new ConflictError(`This operation cannot be accepted while the connection is ${navigation.status}.`);
    }
    return acceptVerified(deps, tx, op, key, navigation);
  });
}

/** The flow is this principal's and client's, for this operation. */
function checkOperation(navigation: NavigationRecord, op: OriginalOperation): void {
  if (!samePrincipal(navigation.subject, op.principal))
    throw new ForbiddenError('This connection flow belongs to another user.');
  if ((navigation.clientId ?? '') !== (op.clientId ?? ''))
    throw new ForbiddenError('This connection flow was started by another client of this user.');
  if (navigation.tool !== op.tool || navigation.requestDigest !== op.requestDigest)
    throw new ConflictError('This connection flow was started for another operation.');
}

/** The receipt of an operation accepted now from a verified flow, and its sealed arguments. */
function newReceipt(deps: BrokerDeps, op: OriginalOperation, key: string, navigation: NavigationRecord) {
  // The lineages cannot be swapped: a navigation is accepted only on the path that started it.
  if (navigation.lineage !== op.lineage)
    throw new ConflictError(`This connection flow belongs to the ${navigation.lineage} lineage, not ${op.lineage}.`);
  const now = deps.clock.now();
  const receipt: NewReceipt = {
    id: randomUUID(),
    operationKey: key,
    navigationId: navigation.id,
    lineage: op.lineage,
    jsonrpcId: op.jsonrpcId,
    retryGeneration: op.retryGeneration,
    requirementReceipt: `verified:${navigation.id}:v${navigation.rowVersion}`,
    createdAt: now,
  };
  const by = { actor: `mcp:${op.principal.sub}`, now, evidence: { receiptId: receipt.id, lineage: op.lineage } };
  return { receipt, by, sealed: deps.box.seal(JSON.stringify(op.arguments), argumentsAad(key)) };
}

/** A high-risk operation is accepted only after an operator approved it (broker/approvals.ts). */
async function checkApproved(deps: BrokerDeps, db: Queryable, navigation: NavigationRecord): Promise<void> {
  if (!(await isApproved(deps, db, navigation)))
    throw new ConflictError("This operation is waiting for an operator's approval.");
}

/**
 * The acceptance of a flow seen verified, unlocked, in one statement: the compare-and-set moves it
 * and holds its row as the lock would, and the receipt is written beside the move, only if it
 * moved (undefined when another writer moved it first). An approval, once decided, stays decided,
 * so it is read before.
 */
async function acceptSeenVerified(
  deps: BrokerDeps,
  op: OriginalOperation,
  key: string,
  navigation: NavigationRecord,
): Promise<{ receipt: OperationReceipt; created: boolean } | undefined> {
  checkOperation(navigation, op);
  const { receipt, by, sealed } = newReceipt(deps, op, key, navigation);
  await checkApproved(deps, deps.pool, navigation);
  const moved = await advanceUnlessMoved(deps.pool, navigation, acceptEvents[op.lineage], by, {
    alongside: [receiptInsertAlongside(receipt, sealed)],
  });
  return moved && { receipt: insertedReceipt(receipt), created: true };
}

/** The acceptance of a verified flow locked by the caller in `tx`: the receipt, then the move. */
async function acceptVerified(
  deps: BrokerDeps,
  tx: Queryable,
  op: OriginalOperation,
  key: string,
  navigation: NavigationRecord,
): Promise<{ receipt: OperationReceipt; created: boolean }> {
  const { receipt, by, sealed } = newReceipt(deps, op, key, navigation);
  await checkApproved(deps, tx, navigation);
  const inserted = await insertReceiptOnce(tx, receipt, sealed);
  if (inserted.created) await advance(tx, navigation, acceptEvents[op.lineage], by);
  return inserted;
}

export type BusinessOutcome = { status: 'succeeded' | 'failed'; outcome: Record<string, unknown> };

/** Another caller holds the perform lease and did not finish within the wait: the host may call again. */
export class PerformInProgressError extends ConflictError {
  constructor() {
    super(
      'This operation is being performed by another request right now; call again in a few seconds to get its outcome. It will be done once.',
    );
  }
}

/**
 * The call was sent and its answer lost (a timeout, a reset), to a provider that cannot dedupe a
 * second one: it may or may not have been done. Thrown by a perform, it is recorded on the receipt
 * (markOutcomeUnknown) and no retry, instance or sweep sends it again; an operator decides.
 */
export class OutcomeUnknownError extends UnavailableError {
  constructor(
    readonly what: string,
    options: { cause?: unknown; recorded?: boolean } = {},
  ) {
    super(
      `${what} Whether it was done is unknown, so it is not sent again${options.recorded ? ': it is recorded for an operator to reconcile' : ''}. Check at the service before calling again.`,
      { cause: options.cause, expose: true },
    );
  }
}

/**
 * Thrown by a perform whose provider did nothing and asked the host for more input (an upstream MCP
 * server's input_required): not an outcome. The receipt stays pending, out of the re-drive sweep
 * until `until`, and the host's answer performs this same operation (acceptOriginalOperation's receipt).
 */
export class InputRequiredError extends Error {
  override name = 'InputRequiredError';
  constructor(
    /** What the host is answered: the questions, with a state that names this receipt. */
    readonly relayed: object,
    /** When that state expires: the host's answer cannot come later. */
    readonly until: Date,
  ) {
    super('The provider asked for more input; nothing was done.');
  }
}

/** Given to a perform: keeps its lease `ms` longer than now, while it waits on the host (a nested question). */
export type HoldLease = (ms: number) => Promise<void>;

// Longer than any business call may take (the injected fetch gives up after 10 s), so a lease
// ends only when its holder finished or died; a dead holder's lease simply runs out.
const PERFORM_LEASE_MS = 30_000;

const recordedOutcome = (r: OperationReceipt): BusinessOutcome | undefined =>
  r.outcomeStatus !== 'pending' && r.outcome ? { status: r.outcomeStatus, outcome: r.outcome } : undefined;

/**
 * Runs the business call for an accepted receipt, with the receipt id as its
 * idempotency key, and records the outcome once. A receipt that already has
 * an outcome returns it without calling; one still pending (a crash, a lost
 * answer) is re-driven with the same key. One performer at a time: the caller
 * that takes the receipt's perform lease calls the provider; duplicate
 * retries, other instances and the reconcile sweep wait up to `waitMs` for its
 * outcome (woken by the outcome's signal, or when the lease runs out), then
 * give up with PerformInProgressError rather than call the provider at the
 * same time with the same key.
 */
export async function runAcceptedOperation(
  deps: BrokerDeps,
  receipt: OperationReceipt,
  call: (idempotencyKey: string, hold: HoldLease) => Promise<BusinessOutcome>,
  waitMs: number = deps.retryWaitMs,
  /** An operator's re-drive: an operation whose outcome is unknown is performed again. */
  unknownToo = false,
  /**
   * Whether the provider dedupes by the idempotency key. One that does not is never sent again
   * after a performer that took the lease ended without an outcome (a crash, SIGKILL): it may have
   * sent the call, so the outcome is unknown and recorded for an operator instead.
   */
  replayable = true,
): Promise<BusinessOutcome> {
  const owner = randomUUID();
  const deadline = Date.now() + waitMs;
  let current = receipt;
  for (;;) {
    const known = recordedOutcome(current);
    if (known) return known;
    if (current.outcomeUnknownAt && !unknownToo)
      throw new OutcomeUnknownError(
        `The call was sent at ${current.outcomeUnknownAt.toISOString()} and no answer came back.`,
        { recorded: true },
      );
    const now = deps.clock.now();
    const until = new Date(now.getTime() + PERFORM_LEASE_MS);
    if (await takePerformLease(deps.pool, current.id, owner, now, until, unknownToo)) {
      // A lease that ran out without an outcome: its holder may have sent the call before it died.
      if (!replayable && !unknownToo && current.performLeaseUntil !== undefined) {
        // Its update wakes identical calls waiting for it (migrations/0023_wake_waiters.sql).
        await markOutcomeUnknown(deps.pool, current.id, owner, now);
        throw new OutcomeUnknownError(
          `An earlier attempt took it up at ${new Date(current.performLeaseUntil.getTime() - PERFORM_LEASE_MS).toISOString()} and ended without recording an answer.`,
          { recorded: true },
        );
      }
      return perform(deps, current, owner, call);
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new PerformInProgressError();
    const free = async () => {
      const fresh = await findReceiptById(deps.pool, current.id);
      return (
        !fresh ||
        recordedOutcome(fresh) !== undefined ||
        fresh.performLeaseUntil === undefined ||
        fresh.performLeaseUntil <= deps.clock.now()
      );
    };
    const leaseLeft = (current.performLeaseUntil?.getTime() ?? now.getTime()) - now.getTime();
    await deps.signal.waitFor(current.navigationId, Math.max(10, Math.min(remaining, leaseLeft + 10)), free);
    const fresh = await findReceiptById(deps.pool, current.id);
    if (!fresh) throw new NotFoundError('The accepted operation is not known.');
    current = fresh;
  }
}

async function perform(
  deps: BrokerDeps,
  receipt: OperationReceipt,
  owner: string,
  call: (idempotencyKey: string, hold: HoldLease) => Promise<BusinessOutcome>,
): Promise<BusinessOutcome> {
  let result: BusinessOutcome;
  const hold: HoldLease = (ms) =>
    extendPerformLease(deps.pool, receipt.id, owner, new Date(deps.clock.now().getTime() + ms + PERFORM_LEASE_MS));
  try {
    reachFaultPoint('operation.before_call');
    result = await call(receipt.id, hold);
  } catch (err) {
    if (err instanceof InputRequiredError) {
      // Its update wakes identical calls waiting for the lease (migrations/0023_wake_waiters.sql): each
      // may now ask the upstream (which does nothing either).
      await awaitHostInput(deps.pool, receipt.id, owner, err.until);
      throw err;
    }
    if (err instanceof OutcomeUnknownError) {
      // Its update wakes identical calls waiting for it (migrations/0023_wake_waiters.sql): they answer
      // the same, without sending it.
      await markOutcomeUnknown(deps.pool, receipt.id, owner, deps.clock.now());
      throw new OutcomeUnknownError(err.what, { cause: err.cause, recorded: true });
    }
    // No outcome is known: the next caller (a retry, the sweep) tries again with the same key, at once.
    await releasePerformLease(deps.pool, receipt.id, owner).catch(() => undefined);
    throw err;
  }
  reachFaultPoint('operation.before_outcome');
  // Its update wakes identical calls waiting for this outcome, on any instance (migrations/0023_wake_waiters.sql).
  const recorded = await recordOutcome(
    deps.pool,
    receipt.id,
    result.status,
    result.outcome,
    resultDigestOf(result.outcome),
    deps.clock.now(),
  );
  if (recorded?.outcome)
    return { status: recorded.outcomeStatus === 'failed' ? 'failed' : 'succeeded', outcome: recorded.outcome };
  // Recorded by someone else meanwhile (a lease that ran out): answer what was recorded first.
  const again = await findReceiptById(deps.pool, receipt.id);
  return (again && recordedOutcome(again)) ?? result;
}
