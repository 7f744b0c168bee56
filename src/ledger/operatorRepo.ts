import type { SqlPart } from '../db/alongside.js';
import type { Queryable } from '../db/pool.js';

export const URL_ELICITATION_PAUSED = 'url_elicitation_paused';

/**
 * In the caller's transaction: holds off a pause until it ends, and reads the switch. FOR SHARE on
 * its row (there from migrations/0024_consent_round_trips.sql): a pause updates that row, so it
 * waits for every consent that read the switch before it, and a consent reading it during a pause
 * waits and then reads it paused. No OAuth transaction is written by a consent that read the switch
 * before a pause and committed after it.
 */
export async function readSwitchHoldingPause(
  db: Queryable,
  name: string,
): Promise<{ engaged: boolean; reason: string } | undefined> {
  const { rows } = await db.query<{ engaged: boolean; reason: string }>(
    'SELECT engaged, reason FROM broker_switches WHERE name = $1 FOR SHARE',
    [name],
  );
  return rows[0];
}

/**
 * readSwitchHoldingPause as a condition of another statement, true while the switch is engaged (or
 * its row is missing, which a caller takes as engaged): its row is read FOR SHARE there, so a pause
 * waits for that statement, and the statement, meeting a pause, waits and reads it paused.
 */
export const switchEngaged = (name: string): SqlPart => ({
  text: (p) => `SELECT engaged FROM broker_switches WHERE name = ${p(1)} FOR SHARE`,
  values: [name],
});

/** findSwitch as a condition of another statement: true unless the switch is engaged (a missing row is released). */
export const switchReleased = (name: string): SqlPart => ({
  text: (p) => `SELECT NOT EXISTS (SELECT 1 FROM broker_switches WHERE name = ${p(1)} AND engaged)`,
  values: [name],
});

/** In the caller's transaction: waits for in-flight consents to end before the switch changes. */
export async function lockSwitchExclusive(db: Queryable, name: string): Promise<void> {
  await db.query('SELECT 1 FROM broker_switches WHERE name = $1 FOR UPDATE', [name]);
}

export async function findSwitch(
  db: Queryable,
  name: string,
): Promise<{ engaged: boolean; reason: string } | undefined> {
  const { rows } = await db.query<{ engaged: boolean; reason: string }>(
    'SELECT engaged, reason FROM broker_switches WHERE name = $1',
    [name],
  );
  return rows[0];
}

export async function setSwitch(
  db: Queryable,
  name: string,
  engaged: boolean,
  reason: string,
  actor: string,
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO broker_switches (name, engaged, reason, actor, changed_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (name) DO UPDATE SET engaged = EXCLUDED.engaged, reason = EXCLUDED.reason, actor = EXCLUDED.actor, changed_at = EXCLUDED.changed_at`,
    [name, engaged, reason, actor, now],
  );
}

/** Append-only: INSERT and SELECT only (a trigger refuses UPDATE and DELETE). */
export async function recordOperatorAction(
  db: Queryable,
  action: string,
  reason: string,
  actor: string,
  details: Record<string, unknown>,
  now: Date,
): Promise<void> {
  await db.query(
    'INSERT INTO operator_actions (action, reason, actor, details, created_at) VALUES ($1, $2, $3, $4, $5)',
    [action, reason, actor, JSON.stringify(details), now],
  );
}

/**
 * One refused operator access, counted: the subject's first refusal in a minute (UTC) is a row of
 * its own (the request it names is that first one), each later one in that minute adds one to the
 * row's `refusals` (migrations/0027_operator_refusal_counts.sql).
 */
export async function countOperatorRefusal(
  db: Queryable,
  reason: string,
  actor: string,
  details: Record<string, unknown>,
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO operator_actions (action, reason, actor, details, created_at, refused_minute)
     VALUES ('access_refused', $1, $2, $3, $4, date_trunc('minute', $4::timestamptz AT TIME ZONE 'UTC'))
     ON CONFLICT (actor, refused_minute) DO UPDATE SET refusals = operator_actions.refusals + 1`,
    [reason, actor, JSON.stringify(details), now],
  );
}

/** Revokes every OAuth transaction not yet consumed; their callbacks will find nothing. */
export async function deletePendingAuthorizations(db: Queryable): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM oauth_transactions');
  return rowCount ?? 0;
}
