import { State } from '../flow/navigationStates.js';
import type { Queryable } from '../db/pool.js';

// Read-only aggregates of navigation_events for /metrics. SELECT only.
//
// The ledger is read window by window between two snapshots (ledger_between,
// migrations/0018): a window holds the rows whose transactions had finished in
// the later snapshot and not in the earlier one. Writers take no shared lock
// and their rows may commit in any order, yet a reader that remembers the
// snapshot it counted up to never misses a row that committed late nor counts
// one twice. A window is read in chunks of rows, in (tx_id, id) order.

/** A snapshot in which no transaction has finished: nothing counted yet (as ledger_anchor starts from). */
export const NOTHING_COUNTED = '1:1:';

/** A position in a window: the (tx_id, id) of the last row read. */
export type WindowKey = readonly [txId: string, id: string];
export const WINDOW_START: WindowKey = ['0', '0'];

/** The rows of the window from `since` to `upto` after `after`, through `through` (or to the window's end). */
export interface LedgerChunk {
  since: string;
  upto: string;
  after: WindowKey;
  through: WindowKey | undefined;
}

/** The chunk's rows of navigation_events (as `e` if named), with chunkParams as $1 to $6. */
const inChunk = (e = 'navigation_events') => `ledger_between(${e}.tx_id, $1::pg_snapshot, $2::pg_snapshot)
  AND (${e}.tx_id, ${e}.id) > ($3::xid8, $4::bigint)
  AND (${e}.tx_id, ${e}.id) <= (coalesce($5::xid8, pg_snapshot_xmax($2::pg_snapshot)), coalesce($6::bigint, 0))`;

const chunkParams = (c: LedgerChunk) => [c.since, c.upto, c.after[0], c.after[1], c.through?.[0], c.through?.[1]];

/** The snapshot a new window reads up to. */
export async function currentSnapshot(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ s: string }>('SELECT pg_current_snapshot()::text AS s');
  return rows[0]!.s;
}

/** The key of the `n`-th row of the window after `after`; undefined when fewer rows are left. */
export async function findChunkEnd(
  db: Queryable,
  since: string,
  upto: string,
  after: WindowKey,
  n: number,
): Promise<WindowKey | undefined> {
  const { rows } = await db.query<{ tx_id: string; id: string }>(
    `SELECT tx_id::text AS tx_id, id FROM navigation_events
      WHERE ${inChunk()} ORDER BY tx_id, id OFFSET $7 LIMIT 1`,
    [...chunkParams({ since, upto, after, through: undefined }), n - 1],
  );
  const r = rows[0];
  return r && [r.tx_id, r.id];
}

export interface TransitionCount {
  event: string;
  toStatus: string;
  count: number;
}

/** The chunk's rows, counted by event and target state. */
export async function countTransitions(db: Queryable, chunk: LedgerChunk): Promise<TransitionCount[]> {
  const { rows } = await db.query<{ event: string; to_status: string; n: string }>(
    `SELECT event, to_status, count(*) AS n FROM navigation_events WHERE ${inChunk()} GROUP BY event, to_status`,
    chunkParams(chunk),
  );
  return rows.map((r) => ({ event: r.event, toStatus: r.to_status, count: Number(r.n) }));
}

export interface LatencyBucket {
  /** Index into the bounds: the first bound >= every value here; bounds.length for +Inf. */
  bucket: number;
  count: number;
  sumSeconds: number;
}

/**
 * Seconds from a navigation's OUT_OF_BAND_PENDING entry to each of its
 * REQUIREMENT_VERIFIED entries in the chunk (the pending entry is earlier in
 * the same flow, so it committed first), grouped into the histogram's buckets
 * in SQL (Prometheus `le` semantics: a value equal to a bound belongs to that
 * bound), so catching up over a million flows moves a dozen rows, not a million.
 */
export async function findCompletionLatencyBuckets(
  db: Queryable,
  chunk: LedgerChunk,
  bounds: readonly number[],
): Promise<LatencyBucket[]> {
  const { rows } = await db.query<{ bucket: number; n: string; total: number }>(
    `SELECT (SELECT count(*) FROM unnest($7::float8[]) AS b(le) WHERE b.le < d.s)::int AS bucket, count(*) AS n, sum(d.s)::float8 AS total
       FROM (SELECT greatest(0, extract(epoch FROM v.created_at - p.created_at))::float8 AS s
               FROM navigation_events v
               CROSS JOIN LATERAL (
                 SELECT created_at FROM navigation_events p
                  WHERE p.navigation_id = v.navigation_id AND p.to_status = $9 AND p.flow_seq < v.flow_seq
                  ORDER BY p.flow_seq DESC LIMIT 1) p
              WHERE v.to_status = $8 AND ${inChunk('v')}) d
      GROUP BY 1`,
    [...chunkParams(chunk), bounds, State.REQUIREMENT_VERIFIED, State.OUT_OF_BAND_PENDING],
  );
  return rows.map((r) => ({ bucket: r.bucket, count: Number(r.n), sumSeconds: Number(r.total) }));
}
