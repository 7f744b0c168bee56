import type { Queryable } from '../db/pool.js';

// `broker ledger verify`: recomputes, in the database (migrations/0018), every
// flow's hash chain and head, the anchors' chain and the heads each anchor
// sealed, and, given an anchor exported earlier, checks that the database
// still holds that anchor. SELECT only.

export type BreakReason =
  /** An event differs from what was chained: altered after it was written. */
  | 'hash'
  /** The event before it in its flow is missing (its first event, too). */
  | 'gap'
  /** It names another event as its predecessor. */
  | 'link'
  /** The flow's last event is not the head recorded for it (or none is recorded). */
  | 'head'
  /** The flow's chain ends before its recorded head: its newest events are missing. */
  | 'truncated'
  /** An event an anchor sealed is missing or differs. */
  | 'anchored'
  /** An anchor was altered, removed or relinked, or its list of heads was altered. */
  | 'anchor'
  /** The exported anchor is not in the database as it was exported. */
  | 'export'
  /** The global chain this ledger had before 0018 was already broken when it was re-chained. */
  | 'legacy';

export interface ChainBreak {
  reason: BreakReason;
  navigationId?: string;
  /** The event's position in its flow (for truncated: where the chain ends, 0 for no event). */
  flowSeq?: number;
  /** The event's id, where one exists. */
  id?: number;
  /** truncated: the position the flow's head records. */
  headSeq?: number;
  anchorSeq?: number;
  /** legacy: the position in the old global chain and what was wrong there. */
  legacy?: { chainSeq: number; reason: string };
}

export interface VerifyResult {
  /** Events in the ledger. */
  rows: number;
  flows: number;
  anchors: number;
  /** The exported anchor's position, when one was checked. */
  anchorChecked: number | undefined;
  firstBreak: ChainBreak | undefined;
}

export interface VerifyOptions {
  /** Events (and anchored heads) per statement: each range is one statement, well inside the statement timeout. */
  chunk?: number;
  onProgress?: (checkedEvents: number, events: number) => void;
  /** An anchor exported earlier (`broker ledger anchor export`). */
  anchor?: { seq: number; hash: string };
}

const VERIFY_CHUNK = 100_000;

/** Reads only; each statement covers one bounded range. Returns the first break found, in the order checked. */
export async function verifyChain(db: Queryable, options: VerifyOptions = {}): Promise<VerifyResult> {
  const chunk = options.chunk ?? VERIFY_CHUNK;
  const counts = await db.query<{ rows: string; flows: string; anchors: string | null }>(
    `SELECT (SELECT count(*) FROM navigation_events) AS rows, (SELECT count(*) FROM ledger_heads) AS flows,
            (SELECT max(seq) FROM ledger_anchors) AS anchors`,
  );
  const c = counts.rows[0]!;
  const result = (firstBreak: ChainBreak | undefined): VerifyResult => ({
    rows: Number(c.rows),
    flows: Number(c.flows),
    anchors: Number(c.anchors ?? 0),
    anchorChecked: options.anchor?.seq,
    firstBreak,
  });
  const found =
    (await checkAnchors(db, chunk)) ??
    (options.anchor && (await checkExported(db, options.anchor))) ??
    (await checkLegacy(db)) ??
    (await checkFlows(db, chunk, Number(c.rows), options.onProgress)) ??
    (await checkAnchoredHeads(db, chunk));
  return result(found);
}

/**
 * The anchors' chain, each anchor with the digest of its heads recomputed, in ranges of about
 * `chunk` heads (an anchor holds at most 10,000), each range read with the anchor before it.
 */
async function checkAnchors(db: Queryable, chunk: number): Promise<ChainBreak | undefined> {
  const { rows } = await db.query<{ last: string | null }>('SELECT max(seq) AS last FROM ledger_anchors');
  const last = Number(rows[0]?.last ?? 0);
  for (let lo = 1; lo <= last;) {
    const edge = await db.query<{ anchor_seq: string }>(
      `SELECT anchor_seq FROM ledger_anchor_heads WHERE anchor_seq >= $1 ORDER BY anchor_seq, navigation_id OFFSET $2 LIMIT 1`,
      [lo, chunk],
    );
    const hi = Math.max(lo, Number(edge.rows[0]?.anchor_seq ?? last + 1) - 1);
    const found = await db.query<{ seq: string }>(
      `WITH a AS (
         SELECT a.seq, a.hash, a.prev_hash, a.heads_digest,
                ledger_anchor_hash(a.prev_hash, a) AS expected,
                CASE WHEN a.seq >= $1 THEN ledger_anchor_digest(a.seq) END AS digest,
                lag(a.hash) OVER (ORDER BY a.seq) AS prev_actual, lag(a.seq) OVER (ORDER BY a.seq) AS prev_seq
           FROM ledger_anchors a WHERE a.seq BETWEEN $1::bigint - 1 AND $2)
       SELECT seq FROM a
        WHERE seq >= $1 AND (hash <> expected OR heads_digest <> digest OR seq <> coalesce(prev_seq, 0) + 1
              OR prev_hash IS DISTINCT FROM prev_actual)
        ORDER BY seq LIMIT 1`,
      [lo, hi],
    );
    const r = found.rows[0];
    if (r) return { reason: 'anchor', anchorSeq: Number(r.seq) };
    lo = hi + 1;
  }
  return undefined;
}

/** With the anchors' chain intact, the exported hash at its position vouches for every anchor up to it. */
async function checkExported(db: Queryable, exported: { seq: number; hash: string }): Promise<ChainBreak | undefined> {
  const { rows } = await db.query<{ hash: string }>(
    `SELECT encode(hash, 'hex') AS hash FROM ledger_anchors WHERE seq = $1`,
    [exported.seq],
  );
  return rows[0]?.hash === exported.hash ? undefined : { reason: 'export', anchorSeq: exported.seq };
}

async function checkLegacy(db: Queryable): Promise<ChainBreak | undefined> {
  const { rows } = await db.query<{ seq: string; chain_seq: string; reason: string }>(
    `SELECT seq, legacy->'firstBreak'->>'chainSeq' AS chain_seq, legacy->'firstBreak'->>'reason' AS reason
       FROM ledger_anchors WHERE jsonb_typeof(legacy->'firstBreak') = 'object' ORDER BY seq LIMIT 1`,
  );
  const r = rows[0];
  return (
    r && { reason: 'legacy', anchorSeq: Number(r.seq), legacy: { chainSeq: Number(r.chain_seq), reason: r.reason } }
  );
}

/**
 * Every flow's chain and head, in ranges of whole flows (by navigation id) of about `chunk`
 * events: each event's hash recomputed, its position one after its predecessor's and its
 * prev_hash that predecessor's hash; the last event matching the flow's head; and a head
 * whose flow has no event left.
 */
async function checkFlows(
  db: Queryable,
  chunk: number,
  total: number,
  onProgress: VerifyOptions['onProgress'],
): Promise<ChainBreak | undefined> {
  let lo: string | null = null;
  let checked = 0;
  for (;;) {
    // The range ends with the flow of the chunk-th event after lo, all of that flow's events included.
    const edge: { rows: { navigation_id: string }[] } = await db.query<{ navigation_id: string }>(
      `SELECT navigation_id FROM navigation_events WHERE ($1::uuid IS NULL OR navigation_id > $1)
        ORDER BY navigation_id, flow_seq OFFSET $2 LIMIT 1`,
      [lo, chunk - 1],
    );
    const hi = edge.rows[0]?.navigation_id ?? null;
    const found = await db.query<{
      n: string;
      navigation_id: string | null;
      flow_seq: string | null;
      id: string | null;
      head_seq: string | null;
      reason: BreakReason | null;
    }>(
      `WITH e AS (
         SELECT e.id, e.navigation_id, e.flow_seq, e.hash, e.prev_hash,
                navigation_event_hash(e.prev_hash, e.flow_seq, e) AS expected,
                lag(e.hash) OVER w AS prev_actual, lag(e.flow_seq) OVER w AS prev_seq,
                lead(e.flow_seq) OVER w IS NULL AS last
           FROM navigation_events e
          WHERE ($1::uuid IS NULL OR e.navigation_id > $1) AND ($2::uuid IS NULL OR e.navigation_id <= $2)
         WINDOW w AS (PARTITION BY e.navigation_id ORDER BY e.flow_seq)),
       checked AS (
         SELECT e.navigation_id, e.flow_seq, e.id, h.seq AS head_seq,
                CASE WHEN e.hash <> e.expected THEN 'hash'
                     WHEN e.flow_seq <> coalesce(e.prev_seq, 0) + 1 THEN 'gap'
                     WHEN e.prev_hash IS DISTINCT FROM e.prev_actual THEN 'link'
                     WHEN e.last AND h.seq > e.flow_seq THEN 'truncated'
                     WHEN e.last AND (h.seq IS NULL OR h.seq < e.flow_seq OR h.hash <> e.hash) THEN 'head' END AS reason
           FROM e LEFT JOIN ledger_heads h
             ON e.last AND h.navigation_id = e.navigation_id
            AND ($1::uuid IS NULL OR h.navigation_id > $1) AND ($2::uuid IS NULL OR h.navigation_id <= $2)),
       emptied AS (
         SELECT h.navigation_id, 0::bigint AS flow_seq, NULL::bigint AS id, h.seq AS head_seq, 'truncated' AS reason
           FROM ledger_heads h
          WHERE ($1::uuid IS NULL OR h.navigation_id > $1) AND ($2::uuid IS NULL OR h.navigation_id <= $2)
            AND NOT EXISTS (SELECT 1 FROM navigation_events x WHERE x.navigation_id = h.navigation_id))
       SELECT (SELECT count(*) FROM e) AS n, b.*
         FROM (SELECT 1) one LEFT JOIN LATERAL (
           SELECT * FROM checked WHERE reason IS NOT NULL UNION ALL SELECT * FROM emptied
            ORDER BY navigation_id, flow_seq LIMIT 1) b ON true`,
      [lo, hi],
    );
    const r = found.rows[0]!;
    if (r.reason !== null)
      return {
        reason: r.reason,
        navigationId: r.navigation_id!,
        flowSeq: Number(r.flow_seq),
        ...(r.id !== null ? { id: Number(r.id) } : {}),
        ...(r.reason === 'truncated' && r.head_seq !== null ? { headSeq: Number(r.head_seq) } : {}),
      };
    checked += Number(r.n);
    onProgress?.(Math.min(checked, total), total);
    if (hi === null) return undefined;
    lo = hi;
  }
}

/** Every head an anchor sealed is still in its flow with the hash it had, in ranges of `chunk` heads. */
async function checkAnchoredHeads(db: Queryable, chunk: number): Promise<ChainBreak | undefined> {
  let after: [string, string] = ['0', '00000000-0000-0000-0000-000000000000'];
  for (;;) {
    const found: {
      rows: {
        last_seq: string;
        last_id: string;
        anchor_seq: string | null;
        navigation_id: string | null;
        flow_seq: string | null;
      }[];
    } = await db.query(
      `WITH c AS MATERIALIZED (
         SELECT anchor_seq, navigation_id, flow_seq, hash FROM ledger_anchor_heads
          WHERE (anchor_seq, navigation_id) > ($1::bigint, $2::uuid)
          ORDER BY anchor_seq, navigation_id LIMIT $3),
       last AS (SELECT anchor_seq, navigation_id FROM c ORDER BY anchor_seq DESC, navigation_id DESC LIMIT 1),
       bad AS (
         SELECT c.anchor_seq, c.navigation_id, c.flow_seq FROM c
           LEFT JOIN navigation_events e ON e.navigation_id = c.navigation_id AND e.flow_seq = c.flow_seq
          WHERE e.id IS NULL OR e.hash <> c.hash
          ORDER BY c.anchor_seq, c.navigation_id LIMIT 1)
       SELECT last.anchor_seq AS last_seq, last.navigation_id AS last_id, bad.anchor_seq, bad.navigation_id, bad.flow_seq
         FROM last LEFT JOIN bad ON true`,
      [after[0], after[1], chunk],
    );
    const r = found.rows[0];
    if (!r) return undefined;
    if (r.anchor_seq !== null)
      return {
        reason: 'anchored',
        anchorSeq: Number(r.anchor_seq),
        navigationId: r.navigation_id!,
        flowSeq: Number(r.flow_seq),
      };
    after = [r.last_seq, r.last_id];
  }
}
