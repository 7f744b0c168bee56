import type { Queryable } from '../db/pool.js';

// The anchors of the ledger (migrations/0018): each seals the heads of the flows
// that moved since the anchor before it and is chained to that anchor. Written
// by ledger_anchor() in the database, so the migration's first anchor and every
// later one are made by one definition.

export interface Anchor {
  seq: number;
  createdAt: Date;
  /** Heads this anchor sealed: flows with an event since the anchors before (at most 10,000 to an anchor). */
  flows: number;
  /** Hex SHA-256 over the anchor, its heads and the anchor before it. */
  hash: string;
}

/**
 * Seals every event committed since the last anchor, as one statement (its own transaction
 * unless `db` is in one). Takes no lock an append waits on; returns the last new anchor's
 * position, or undefined when nothing is new or another instance is writing anchors right now.
 */
export async function writeAnchor(db: Queryable, now: Date): Promise<number | undefined> {
  const { rows } = await db.query<{ seq: string | null }>('SELECT ledger_anchor($1, pg_current_snapshot()) AS seq', [
    now,
  ]);
  const seq = rows[0]?.seq;
  return seq === null || seq === undefined ? undefined : Number(seq);
}

export async function findLatestAnchor(db: Queryable): Promise<Anchor | undefined> {
  const { rows } = await db.query<{ seq: string; created_at: Date; flows: number; hash: string }>(
    `SELECT seq, created_at, flows, encode(hash, 'hex') AS hash FROM ledger_anchors ORDER BY seq DESC LIMIT 1`,
  );
  const r = rows[0];
  return r && { seq: Number(r.seq), createdAt: r.created_at, flows: r.flows, hash: r.hash };
}
