import { revokeLiveSessions, SESSION_ID_PATTERN, type SessionListing } from '../auth/webSessionRepo.js';
import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { InvalidInputError } from '../errors/appError.js';
import { recordOperatorAction } from '../ledger/operatorRepo.js';
import type { OperatorAct } from './recovery.js';

/** One session by its public id, or every session of a subject. */
export type SessionTarget = { sessionId: string } | { subject: string };

/**
 * `<subject|session-id>` as an operator types it (CLI and /ops alike): a `sess_…` id names one
 * session, anything else a subject (`sub`). Identity providers' subjects are often UUIDs, never
 * `sess_` and 32 hex digits, so the two cannot be confused.
 */
export function parseSessionTarget(raw: string): SessionTarget {
  const value = raw.trim();
  if (value === '' || value.length > 255)
    throw new InvalidInputError('Name a session (sess_…) or a subject of at most 255 characters.');
  return SESSION_ID_PATTERN.test(value) ? { sessionId: value } : { subject: value };
}

export function describeTarget(target: SessionTarget): string {
  return 'sessionId' in target ? `session ${target.sessionId}` : `every session of ${target.subject}`;
}

/**
 * Ends browser sessions before their expiry: the next request of those browsers is signed out
 * (their cookies name a revoked session). Recorded in operator_actions, in the same transaction,
 * with what was revoked, even when nothing matched (the operator's intent is on record). The
 * identity provider's own session is not ended: a revoked browser that signs in again is a new
 * sign-in; to keep someone out, remove them at the provider.
 */
export async function revokeSessions(
  pool: Pool,
  target: SessionTarget,
  act: OperatorAct,
  now: Date,
): Promise<SessionListing[]> {
  return withTransaction(pool, async (tx) => {
    const revoked = await revokeLiveSessions(tx, target, now);
    await recordOperatorAction(
      tx,
      'revoke_sessions',
      act.reason,
      act.actor,
      { target, revoked: revoked.map((s) => ({ id: s.id, subject: s.subject })) },
      now,
    );
    return revoked;
  });
}
