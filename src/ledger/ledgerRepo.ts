import { SpanKind } from '@opentelemetry/api';
import { alongsideItems, type Alongside } from '../db/alongside.js';
import type { Queryable } from '../db/pool.js';
import { inSpan } from '../telemetry/spans.js';

export interface LedgerEntry {
  navigationId: string;
  fromStatus: string;
  toStatus: string;
  event: string;
  /** Who caused it: 'mcp:<sub>', 'browser:<sub>', 'provider:<id>', 'system'. */
  actor: string;
  /** Safe facts only: never a token, code, verifier or state value. */
  evidence: Record<string, unknown>;
  at: Date;
}

// INSERT and SELECT only: the ledger is append-only (and a trigger refuses UPDATE/DELETE). The
// database chains each entry to its flow's previous one (migrations/0018), under a lock on that
// flow's chain alone, held until the caller's transaction ends.
export async function appendEntry(db: Queryable, entry: LedgerEntry): Promise<void> {
  await db.query(
    `INSERT INTO navigation_events (navigation_id, from_status, to_status, event, actor, evidence, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      entry.navigationId,
      entry.fromStatus,
      entry.toStatus,
      entry.event,
      entry.actor,
      JSON.stringify(entry.evidence),
      entry.at,
    ],
  );
}

/** Several entries in one statement, in order (their ids follow the array). */
export async function appendEntries(db: Queryable, entries: readonly LedgerEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const values: unknown[] = [];
  const rows = entries.map((e, i) => {
    values.push(e.navigationId, e.fromStatus, e.toStatus, e.event, e.actor, JSON.stringify(e.evidence), e.at);
    const n = i * 7;
    return `($${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6}, $${n + 7})`;
  });
  await db.query(
    `INSERT INTO navigation_events (navigation_id, from_status, to_status, event, actor, evidence, created_at) VALUES ${rows.join(', ')}`,
    values,
  );
}

/** A statement that writes flows (elicitation_navigations) and returns their rows, `id` among them. */
export interface FlowWrite {
  text: string;
  values: unknown[];
}

/**
 * `write` and the ledger entries of what it did, in one statement (a data-modifying WITH): the
 * entries are appended after it, in the order given, each extending its flow's chain through the
 * same trigger and per-flow lock as appendEntries, taken once `write` holds the flow's row. An entry
 * whose flow `write` did not return is not written, so a compare-and-set that moved nothing records
 * nothing. `alongside` writes more in the same statement (one WITH item each, as a data-modifying
 * WITH cannot nest), so all of it, or none, is done without a transaction of its own. Returns the
 * rows `write` returned.
 */
export function writeWithEntries<R extends { id: string }>(
  db: Queryable,
  write: FlowWrite,
  entries: readonly LedgerEntry[],
  alongside: readonly Alongside[] = [],
): Promise<R[]> {
  // The flows' writes, their ledger entries and what goes beside them: one statement, often a flow step's only write.
  return inSpan(
    'db flow write',
    { ...FLOW_WRITE_SPAN, 'broker.db.alongside': alongside.length },
    () => writeFlows<R>(db, write, entries, alongside),
    { kind: SpanKind.CLIENT },
  );
}

const FLOW_WRITE_SPAN = { 'db.system.name': 'postgresql', 'db.operation.name': 'flow_write' };

async function writeFlows<R extends { id: string }>(
  db: Queryable,
  write: FlowWrite,
  entries: readonly LedgerEntry[],
  alongside: readonly Alongside[],
): Promise<R[]> {
  const at = (i: number) => `$${write.values.length + i}`;
  const also = alongsideItems(alongside, write.values.length + 7);
  const { rows } = await db.query<R>(
    `WITH written AS (${write.text}),
     appended AS (
       INSERT INTO navigation_events (navigation_id, from_status, to_status, event, actor, evidence, created_at)
       SELECT e.navigation_id, e.from_status, e.to_status, e.event, e.actor, e.evidence, e.at
         FROM unnest(${at(1)}::uuid[], ${at(2)}::text[], ${at(3)}::text[], ${at(4)}::text[], ${at(5)}::text[],
                     ${at(6)}::jsonb[], ${at(7)}::timestamptz[]) WITH ORDINALITY
              AS e(navigation_id, from_status, to_status, event, actor, evidence, at, ord)
        WHERE e.navigation_id IN (SELECT id FROM written)
        ORDER BY e.ord)${also.text && `, ${also.text}`}
     SELECT * FROM written`,
    [
      ...write.values,
      entries.map((e) => e.navigationId),
      entries.map((e) => e.fromStatus),
      entries.map((e) => e.toStatus),
      entries.map((e) => e.event),
      entries.map((e) => e.actor),
      entries.map((e) => JSON.stringify(e.evidence)),
      entries.map((e) => e.at),
      ...also.values,
    ],
  );
  return rows;
}

/** Something that happened to a flow's values and moves nothing (a re-seal, a key found missing). */
export type Observation = Omit<LedgerEntry, 'fromStatus' | 'toStatus'>;

/**
 * Entries that move nothing, in one statement, each recorded in its flow's present state (read by
 * the statement itself), for callers that hold no NavigationRecord: the vault and the re-seal job.
 * Each flow's entries keep their order; the flows are taken in navigation id order, so two such
 * statements lock the flows' chains in one order and cannot deadlock. Observations of a flow that
 * no longer exists are dropped.
 */
export async function appendObservations(db: Queryable, observations: readonly Observation[]): Promise<void> {
  if (observations.length === 0) return;
  await db.query(
    `INSERT INTO navigation_events (navigation_id, from_status, to_status, event, actor, evidence, created_at)
     SELECT n.id, n.status, n.status, o.event, o.actor, o.evidence, o.at
       FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::timestamptz[]) WITH ORDINALITY
            AS o(navigation_id, event, actor, evidence, at, ord)
       JOIN elicitation_navigations n ON n.id = o.navigation_id
      ORDER BY o.navigation_id, o.ord`,
    [
      observations.map((o) => o.navigationId),
      observations.map((o) => o.event),
      observations.map((o) => o.actor),
      observations.map((o) => JSON.stringify(o.evidence)),
      observations.map((o) => o.at),
    ],
  );
}

export async function findEntries(db: Queryable, navigationId: string): Promise<LedgerEntry[]> {
  const { rows } = await db.query<{
    navigation_id: string;
    from_status: string;
    to_status: string;
    event: string;
    actor: string;
    evidence: Record<string, unknown>;
    created_at: Date;
  }>(
    'SELECT navigation_id, from_status, to_status, event, actor, evidence, created_at FROM navigation_events WHERE navigation_id = $1 ORDER BY flow_seq',
    [navigationId],
  );
  return rows.map((r) => ({
    navigationId: r.navigation_id,
    fromStatus: r.from_status,
    toStatus: r.to_status,
    event: r.event,
    actor: r.actor,
    evidence: r.evidence,
    at: r.created_at,
  }));
}

/** How many entries of one navigation record one of `events` (e.g. its refusals so far). */
export async function countEntries(db: Queryable, navigationId: string, events: readonly string[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM navigation_events WHERE navigation_id = $1 AND event = ANY($2)',
    [navigationId, events],
  );
  return rows[0]?.n ?? 0;
}

/** The latest of `events` recorded for a navigation, if any. */
export async function latestEventOf(
  db: Queryable,
  navigationId: string,
  events: readonly string[],
): Promise<string | undefined> {
  const { rows } = await db.query<{ event: string }>(
    'SELECT event FROM navigation_events WHERE navigation_id = $1 AND event = ANY($2) ORDER BY flow_seq DESC LIMIT 1',
    [navigationId, events],
  );
  return rows[0]?.event;
}
