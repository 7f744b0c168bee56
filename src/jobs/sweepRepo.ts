import type { Queryable } from '../db/pool.js';

export interface SweptRows {
  oauthTransactions: number;
  nonces: number;
  sessions: number;
  webhookEvents: number;
}

// Each table's rows that can no longer be used: expired OAuth transactions, single-use nonces whose
// states have expired (a state past its expiry cannot be opened, so its nonce guards nothing), ended
// sessions, webhook events past their retention (src/events/webhookOutboxRepo.ts). A nonce is kept
// `graceMs` longer: whether its state has expired is judged by the clock of the instance that opens
// it, and one lagging behind the sweeper's must still find it spent.
export const NONCE_GRACE_MS = 10 * 60_000;
export const sweptTables = {
  oauthTransactions: { table: 'oauth_transactions', key: 'state_digest', graceMs: 0 },
  nonces: { table: 'mrtr_nonces', key: 'nonce_digest', graceMs: NONCE_GRACE_MS },
  sessions: { table: 'web_sessions', key: 'id_digest', graceMs: 0 },
  webhookEvents: { table: 'webhook_events', key: 'id', graceMs: 0 },
} as const satisfies Record<keyof SweptRows, { table: string; key: string; graceMs: number }>;

/**
 * Deletes at most `limit` unusable rows of one table in one statement (its
 * own transaction on a pool), so a large backlog is cleared in short steps
 * that never hold many row locks. Returns how many went.
 */
export async function deleteExpiredBatch(
  db: Queryable,
  kind: keyof SweptRows,
  now: Date,
  limit: number,
): Promise<number> {
  const { table, key, graceMs } = sweptTables[kind];
  const before = new Date(now.getTime() - graceMs);
  const { rowCount } = await db.query(
    `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [before, limit],
  );
  return rowCount ?? 0;
}
