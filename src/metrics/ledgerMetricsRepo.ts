import { State } from '../flow/navigationStates.js';
import type { Queryable } from '../db/pool.js';

// Read-only aggregates of navigation_events for /metrics. SELECT only.
//
// Ranges are over chain_seq, which the chaining trigger (migrations/0004)
// assigns under an advisory lock held until COMMIT: seq N+1 exists only once
// N has committed, so "every row with chain_seq <= max(chain_seq)" is a
// complete, final set, and a reader that remembers the last seq it counted
// never misses or double-counts a row.

/** The highest chain position written so far (0 for an empty ledger). */
export async function findLedgerHead(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ head: string }>(
    'SELECT coalesce(max(chain_seq), 0) AS head FROM navigation_events',
  );
  return Number(rows[0]?.head ?? 0);
}

export interface TransitionCount {
  event: string;
  toStatus: string;
  count: number;
}

/** Ledger rows with after < chain_seq <= upTo, counted by event and target state. */
export async function countTransitions(db: Queryable, after: number, upTo: number): Promise<TransitionCount[]> {
  const { rows } = await db.query<{ event: string; to_status: string; n: string }>(
    `SELECT event, to_status, count(*) AS n FROM navigation_events
      WHERE chain_seq > $1 AND chain_seq <= $2
      GROUP BY event, to_status`,
    [after, upTo],
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
 * REQUIREMENT_VERIFIED entries with after < chain_seq <= upTo, grouped into
 * the histogram's buckets in SQL (Prometheus `le` semantics: a value equal to
 * a bound belongs to that bound), so catching up over a million flows moves a
 * dozen rows, not a million.
 */
export async function findCompletionLatencyBuckets(
  db: Queryable,
  after: number,
  upTo: number,
  bounds: readonly number[],
): Promise<LatencyBucket[]> {
  const { rows } = await db.query<{ bucket: number; n: string; total: number }>(
    `SELECT (SELECT count(*) FROM unnest($3::float8[]) AS b(le) WHERE b.le < d.s)::int AS bucket, count(*) AS n, sum(d.s)::float8 AS total
       FROM (SELECT greatest(0, extract(epoch FROM v.created_at - p.created_at))::float8 AS s
               FROM navigation_events v
               CROSS JOIN LATERAL (
                 SELECT created_at FROM navigation_events p
                  WHERE p.navigation_id = v.navigation_id AND p.to_status = $5 AND p.chain_seq < v.chain_seq
                  ORDER BY p.chain_seq DESC LIMIT 1) p
              WHERE v.to_status = $4 AND v.chain_seq > $1 AND v.chain_seq <= $2) d
      GROUP BY 1`,
    [after, upTo, bounds, State.REQUIREMENT_VERIFIED, State.OUT_OF_BAND_PENDING],
  );
  return rows.map((r) => ({ bucket: r.bucket, count: Number(r.n), sumSeconds: Number(r.total) }));
}
