import { ConflictError } from '../errors/appError.js';
import type { Queryable } from '../db/pool.js';
import { appendEntry } from '../ledger/ledgerRepo.js';
import type { NavigationRecord } from './navigationRecord.js';
import { compareAndSetStatus } from './navigationRepo.js';
import { nextState, type NavigationEvent } from './navigationStates.js';

export interface Actor {
  actor: string;
  evidence?: Record<string, unknown>;
  now: Date;
}

/**
 * Moves a navigation by one event: the table decides the next state, the
 * UPDATE is a compare-and-set on (id, status, row_version), and the ledger
 * entry is written in the same transaction (the caller's `tx`).
 */
export async function advance(tx: Queryable, navigation: NavigationRecord, event: NavigationEvent, by: Actor, extra: { stateNonceDigest?: Buffer } = {}): Promise<NavigationRecord> {
  const to = nextState(navigation.status, event);
  const updated = await compareAndSetStatus(tx, { id: navigation.id, from: navigation.status, to, rowVersion: navigation.rowVersion, now: by.now, ...extra });
  if (!updated) throw new ConflictError('This connection flow changed meanwhile. Try again.');
  await appendEntry(tx, { navigationId: navigation.id, fromStatus: navigation.status, toStatus: to, event, actor: by.actor, evidence: by.evidence ?? {}, at: by.now });
  return updated;
}

/** A ledger entry for something refused or observed that moves nothing (a subject mismatch, a replayed callback). */
export async function recordWithoutMoving(tx: Queryable, navigation: NavigationRecord, event: string, by: Actor): Promise<void> {
  await appendEntry(tx, { navigationId: navigation.id, fromStatus: navigation.status, toStatus: navigation.status, event, actor: by.actor, evidence: by.evidence ?? {}, at: by.now });
}
