import { State } from '../flow/navigationStates.js';
import type { Queryable } from '../db/pool.js';
import { reconnectableStates, usableStates } from '../secrets/connectionStates.js';

// Read-only aggregates for the operator dashboard. SELECT
// only. Each answers in a handful of rows however large the ledger is:
// counting happens in Postgres, and the latency histogram reads a bounded
// window of the newest ledger rows through the primary key.

/** How many flows are in each state (states with none are absent). At 1M flows: an index-only scan, about 0.13 s. */
export async function countFlowsByState(db: Queryable): Promise<Map<string, number>> {
  const { rows } = await db.query<{ status: string; n: string }>(
    'SELECT status, count(*) AS n FROM elicitation_navigations GROUP BY status',
  );
  return new Map(rows.map((r) => [r.status, Number(r.n)]));
}

/**
 * Flows created per UTC day since `since`, as `YYYY-MM-DD` (days with none are
 * absent). One pass over the table, as there is no index on created_at (at
 * 1M flows over 30 days: about 0.7 s, nearly all of it the scan). The day is a
 * whole number in a fenced subquery (OFFSET 0), so the planner hashes a few
 * dozen groups instead of sorting every row by a per-row estimate.
 */
export async function countFlowsPerDay(db: Queryable, since: Date): Promise<{ day: string; count: number }[]> {
  const { rows } = await db.query<{ day: string; n: string }>(
    `SELECT to_char(date '1970-01-01' + d, 'YYYY-MM-DD') AS day, n
       FROM (SELECT d, count(*) AS n
               FROM (SELECT floor(extract(epoch FROM created_at) / 86400)::int AS d FROM elicitation_navigations WHERE created_at >= $1 OFFSET 0) s
              GROUP BY d) g
      ORDER BY d`,
    [since],
  );
  return rows.map((r) => ({ day: r.day, count: Number(r.n) }));
}

export interface LatencyHistogram {
  /** Count per bucket: index i holds values ≤ bounds[i] (and > bounds[i-1]); index bounds.length the rest. */
  buckets: { bucket: number; count: number }[];
  /** How many verifications the histogram covers (at most the window asked for). */
  sample: number;
}

/**
 * Seconds from a flow's entry into OUT_OF_BAND_PENDING to its entry into
 * REQUIREMENT_VERIFIED, for the newest `window` verifications, bucketed in SQL
 * by `bounds`. The newest verifications come from a backward scan of the
 * primary key; each one's pending entry from the (navigation_id, flow_seq)
 * index (about 60 ms at 1M flows, whatever the ledger's size).
 */
export async function findCompletionLatencyHistogram(
  db: Queryable,
  bounds: readonly number[],
  window: number,
): Promise<LatencyHistogram> {
  const { rows } = await db.query<{ bucket: number; n: string }>(
    `WITH v AS (
       SELECT navigation_id, flow_seq, created_at FROM navigation_events
        WHERE to_status = $3 AND from_status <> $3
        ORDER BY id DESC LIMIT $2),
     d AS (
       SELECT greatest(0, extract(epoch FROM v.created_at - p.created_at))::float8 AS s
         FROM v CROSS JOIN LATERAL (
           SELECT created_at FROM navigation_events p
            WHERE p.navigation_id = v.navigation_id AND p.to_status = $4 AND p.from_status <> $4 AND p.flow_seq < v.flow_seq
            ORDER BY p.flow_seq DESC LIMIT 1) p)
     SELECT (SELECT count(*) FROM unnest($1::float8[]) AS b(le) WHERE b.le < d.s)::int AS bucket, count(*) AS n
       FROM d GROUP BY 1 ORDER BY 1`,
    [bounds, window, State.REQUIREMENT_VERIFIED, State.OUT_OF_BAND_PENDING],
  );
  const buckets = rows.map((r) => ({ bucket: r.bucket, count: Number(r.n) }));
  return { buckets, sample: buckets.reduce((sum, b) => sum + b.count, 0) };
}

/** The flow an operator re-issued this one in place of, if it was re-issued from one. */
export async function findReissuedFrom(db: Queryable, id: string): Promise<string | undefined> {
  const { rows } = await db.query<{ reissued_from: string | null }>(
    'SELECT reissued_from FROM elicitation_navigations WHERE id = $1',
    [id],
  );
  return rows[0]?.reissued_from ?? undefined;
}

export interface ProviderConnections {
  /** Users with a live connection (active or refreshing). */
  users: number;
  /** Live connections (a user may hold several accounts' connections at one provider). */
  connections: number;
  /** Connections that need the user again (the grant was refused or a token expired). */
  needsReauth: number;
}

/** Connections per provider, for the given providers only (absent: none). The connections table holds one row per (user, provider, account). */
export async function countConnectionsByProvider(
  db: Queryable,
  providers: readonly string[],
): Promise<Map<string, ProviderConnections>> {
  const { rows } = await db.query<{ provider: string; users: number; connections: number; needs_reauth: number }>(
    `SELECT provider,
            count(DISTINCT (subject_iss, subject_sub)) FILTER (WHERE state = ANY($2))::int AS users,
            count(*) FILTER (WHERE state = ANY($2))::int AS connections,
            count(*) FILTER (WHERE state = ANY($3))::int AS needs_reauth
       FROM connections WHERE provider = ANY($1) GROUP BY provider`,
    [providers, [...usableStates], [...reconnectableStates]],
  );
  return new Map(
    rows.map((r) => [r.provider, { users: r.users, connections: r.connections, needsReauth: r.needs_reauth }]),
  );
}

export interface ProviderReceipts {
  succeeded: number;
  failed: number;
  /** Sent, and no answer read: held for an operator (the reconcile page). */
  unknown: number;
  pending: number;
}

/**
 * Accepted operations (calls that waited for a connect flow) per provider, by outcome, for the given
 * providers only, across every instance: one pass over the receipts joined to their flows (the
 * flow names the provider), grouped in Postgres.
 */
export async function countReceiptsByProvider(
  db: Queryable,
  providers: readonly string[],
): Promise<Map<string, ProviderReceipts>> {
  const { rows } = await db.query<{
    provider: string;
    succeeded: number;
    failed: number;
    unknown: number;
    pending: number;
  }>(
    `SELECT n.provider,
            count(*) FILTER (WHERE r.outcome_status = 'succeeded')::int AS succeeded,
            count(*) FILTER (WHERE r.outcome_status = 'failed')::int AS failed,
            count(*) FILTER (WHERE r.outcome_status = 'pending' AND r.outcome_unknown_at IS NOT NULL)::int AS unknown,
            count(*) FILTER (WHERE r.outcome_status = 'pending' AND r.outcome_unknown_at IS NULL)::int AS pending
       FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id
      WHERE n.provider = ANY($1) GROUP BY n.provider`,
    [providers],
  );
  return new Map(rows.map(({ provider, ...counts }) => [provider, counts]));
}
