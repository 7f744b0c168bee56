import { ConflictError } from '../errors/appError.js';
import type { Pool, Queryable } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import type { Alongside, SqlPart } from '../db/alongside.js';
import { appendEntry, countEntries, writeWithEntries, type FlowWrite, type LedgerEntry } from '../ledger/ledgerRepo.js';
import { fromRow, type NavigationRecord, type NavigationRow } from '../flow/navigationRecord.js';
import { compareAndSetEachWrite, compareAndSetWrite, lockNavigation, movedInOrder } from './navigationRepo.js';
import {
  canTransition,
  mayStillTake,
  nextState,
  type NavigationEvent,
  type NavigationState,
} from '../flow/navigationStates.js';

export interface Actor {
  actor: string;
  evidence?: Record<string, unknown>;
  now: Date;
}

/** The ledger entries of a chain of events from the navigation's state (the table decides each next state), and where it ends. */
function stepsOf(
  navigation: NavigationRecord,
  events: NavigationEvent | readonly NavigationEvent[],
  by: Actor,
): { steps: LedgerEntry[]; status: NavigationState } {
  const steps: LedgerEntry[] = [];
  let status = navigation.status;
  for (const event of typeof events === 'string' ? [events] : events) {
    const to = nextState(status, event);
    steps.push({
      navigationId: navigation.id,
      fromStatus: status,
      toStatus: to,
      event,
      actor: by.actor,
      evidence: by.evidence ?? {},
      at: by.now,
    });
    status = to;
  }
  return { steps, status };
}

/**
 * Moves a navigation by one event, or by a chain of them: the table decides
 * each next state, one UPDATE is a compare-and-set on (id, status,
 * row_version) to the last, and one ledger entry per step is written in the
 * same statement (in the caller's `tx`).
 */
export async function advance(
  tx: Queryable,
  navigation: NavigationRecord,
  events: NavigationEvent | readonly NavigationEvent[],
  by: Actor,
  extra: { stateNonceDigest?: Buffer } = {},
): Promise<NavigationRecord> {
  const updated = await advanceUnlessMoved(tx, navigation, events, by, extra);
  if (!updated) throw new ConflictError('This connection flow changed meanwhile. Try again.');
  return updated;
}

/**
 * advance() from a navigation as the caller read it, unlocked: its compare-and-set holds the row
 * from then on, as a lock taken before would. Another writer that moved it first is no error here:
 * nothing is written, and the caller locks it and decides again.
 */
export async function advanceUnlessMoved(
  tx: Queryable,
  navigation: NavigationRecord,
  events: NavigationEvent | readonly NavigationEvent[],
  by: Actor,
  /** `unless`: what holds the move back, read in its statement (compareAndSetWrite). */
  extra: { stateNonceDigest?: Buffer; alongside?: readonly Alongside[]; unless?: SqlPart } = {},
): Promise<NavigationRecord | undefined> {
  const { steps, status } = stepsOf(navigation, events, by);
  const [updated] = await writeWithEntries<NavigationRow>(
    tx,
    compareAndSetWrite(
      {
        id: navigation.id,
        from: navigation.status,
        to: status,
        rowVersion: navigation.rowVersion,
        now: by.now,
        ...(extra.stateNonceDigest && { stateNonceDigest: extra.stateNonceDigest }),
      },
      extra.unless,
    ),
    steps,
    extra.alongside,
  );
  return updated && fromRow(updated);
}

/**
 * advance() for several navigations, each by its own events, in one statement: one compare-and-set
 * for all, and every ledger entry, in the order given (the order the caller locked them in). One
 * that another writer moved first fails them all, as advance() fails (`alongside` too, written in
 * the same statement: the caller's transaction undoes it).
 */
export async function advanceEach(
  tx: Queryable,
  moves: readonly { navigation: NavigationRecord; events: NavigationEvent | readonly NavigationEvent[]; by: Actor }[],
  alongside: readonly Alongside[] = [],
): Promise<NavigationRecord[]> {
  const planned = moves.map((m) => ({ ...m, ...stepsOf(m.navigation, m.events, m.by) }));
  const changes = planned.map((m) => ({
    id: m.navigation.id,
    from: m.navigation.status,
    to: m.status,
    rowVersion: m.navigation.rowVersion,
    now: m.by.now,
  }));
  const rows = await writeWithEntries<NavigationRow>(
    tx,
    compareAndSetEachWrite(changes),
    planned.flatMap((m) => m.steps),
    alongside,
  );
  const updated = movedInOrder(changes, rows);
  if (updated.length !== moves.length) throw new ConflictError('This connection flow changed meanwhile. Try again.');
  return updated;
}

/**
 * A new navigation that moves on as it is created (created, then presented), where nobody can see
 * it in between: `insert` is the statement writing it as the table's events leave it, with the row
 * version the move gives it, and the same statement writes the ledger's entries, its creation
 * (`created`, which moves nothing) then each step. The same rows as an INSERT then advance(),
 * without the UPDATE. Undefined when `insert` inserted nothing (a condition of its own held it back).
 */
export async function insertAdvanced(
  tx: Queryable,
  created: NavigationRecord,
  events: NavigationEvent | readonly NavigationEvent[],
  by: Actor,
  insert: (born: NavigationRecord) => FlowWrite,
): Promise<NavigationRecord | undefined> {
  const { steps, status } = stepsOf(created, events, by);
  const born: NavigationRecord = { ...created, status, rowVersion: created.rowVersion + 1, updatedAt: by.now };
  const written = await writeWithEntries(tx, insert(born), [
    {
      navigationId: created.id,
      fromStatus: created.status,
      toStatus: created.status,
      event: 'created',
      actor: by.actor,
      evidence: by.evidence ?? {},
      at: by.now,
    },
    ...steps,
  ]);
  return written.length > 0 ? born : undefined;
}

/** A ledger entry for something refused or observed that moves nothing (a subject mismatch, a replayed callback). */
export async function recordWithoutMoving(
  tx: Queryable,
  navigation: NavigationRecord,
  event: string,
  by: Actor,
): Promise<void> {
  await appendEntry(tx, {
    navigationId: navigation.id,
    fromStatus: navigation.status,
    toStatus: navigation.status,
    event,
    actor: by.actor,
    evidence: by.evidence ?? {},
    at: by.now,
  });
}

/** Refusals a flow records without moving: whoever holds a link or a state can repeat them. */
export const REFUSAL_EVENTS = [
  'subject_mismatch',
  'callback_expired',
  'callback_redirect_mismatch',
  'callback_out_of_order',
  'provider_refused',
  'callback_failed',
  'account_mismatch',
] as const;

/**
 * Records a refusal unless the flow already holds `cap` of them: whoever holds
 * a link can repeat a refusal, and the ledger keeps every row for good, so a
 * loop on one link must not grow it without bound. Past the cap the refusal
 * still refuses; it is only not written (returns false, and the caller logs it).
 */
export async function recordRefusal(
  tx: Queryable,
  navigation: NavigationRecord,
  event: (typeof REFUSAL_EVENTS)[number],
  by: Actor,
  cap: number,
): Promise<boolean> {
  if ((await countEntries(tx, navigation.id, REFUSAL_EVENTS)) >= cap) return false;
  await recordWithoutMoving(tx, navigation, event, by);
  return true;
}

/**
 * Applies a host's or the system's event if the table allows it from where the navigation is now
 * (locked); otherwise does nothing. For answers that may arrive late or twice (host accept, expiry).
 * Returns the navigation as it is then. `seen`, the navigation as the caller read it before: one
 * whose state can never take the event again (mayStillTake) is returned as it is, without a
 * transaction, as the locked row could only refuse it too.
 */
export async function advanceIfAllowed(
  deps: { pool: Pool; clock: { now(): Date } },
  navigationId: string,
  event: NavigationEvent,
  actor: string,
  seen?: NavigationRecord,
): Promise<NavigationRecord | undefined> {
  if (seen?.id === navigationId && !mayStillTake(seen.status, event)) return seen;
  return withTransaction(deps.pool, async (tx) => {
    const locked = await lockNavigation(tx, navigationId);
    if (locked && canTransition(locked.status, event))
      return advance(tx, locked, event, { actor, now: deps.clock.now() });
    return locked;
  });
}
