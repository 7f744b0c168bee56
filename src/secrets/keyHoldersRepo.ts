import type { Queryable } from '../db/pool.js';

/** This instance holds `keyIds` (SECRET_KEYS, active first) as of the database's now. */
export async function announceKeys(db: Queryable, instanceId: string, keyIds: readonly string[]): Promise<void> {
  await db.query(
    `INSERT INTO key_holders (instance_id, key_ids, seen_at) VALUES ($1, $2, now())
     ON CONFLICT (instance_id) DO UPDATE SET key_ids = EXCLUDED.key_ids, seen_at = now()`,
    [instanceId, keyIds],
  );
}

/** A stopping instance no longer counts: the others need not wait for it to age out. */
export async function withdrawKeys(db: Queryable, instanceId: string): Promise<void> {
  await db.query('DELETE FROM key_holders WHERE instance_id = $1', [instanceId]);
}

/**
 * The key id sets of the instances seen within `liveMs`, by the database's clock (one clock for every
 * instance, so their own clocks' skew does not matter). Rows older than ten times that are deleted on
 * the way: an instance killed long ago says nothing.
 */
export async function liveKeySets(db: Queryable, liveMs: number): Promise<string[][]> {
  const { rows } = await db.query<{ key_ids: string[] }>(
    `WITH gone AS (DELETE FROM key_holders WHERE seen_at < now() - make_interval(secs => $1::float8 * 10 / 1000))
     SELECT key_ids FROM key_holders WHERE seen_at >= now() - make_interval(secs => $1::float8 / 1000)`,
    [liveMs],
  );
  return rows.map((r) => r.key_ids);
}
