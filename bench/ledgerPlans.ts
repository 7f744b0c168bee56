import type { Queryable } from '../src/db/pool.js';

// The plans behind the ledger queries, taken from the statements the repo
// functions really issue: a Queryable that runs EXPLAIN (ANALYZE, BUFFERS)
// before each statement, then the statement itself (so the function gets its
// rows and goes on to its next statement). SELECTs only; callers that lock
// rows explain inside a transaction they roll back.

export interface Plan {
  /** The statement, whitespace collapsed. */
  sql: string;
  text: string;
  /** Tables read by a sequential scan, with the rows each scan produced. */
  seqScans: { table: string; rows: number }[];
  indexes: string[];
  ms: number;
}

export function explaining(db: Queryable, plans: Plan[]): Queryable {
  const query = async (text: string, params?: unknown[]) => {
    const slot = plans.length;
    plans.length += 1;
    const explained = await db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) ${text}`,
      params,
    );
    plans[slot] = parsePlan(text, explained.rows.map((r) => r['QUERY PLAN']).join('\n'));
    return db.query(text, params);
  };
  // pg's query() is overloaded; the repo functions use only (text, params).
  return { query } as unknown as Queryable;
}

export function parsePlan(sql: string, text: string): Plan {
  // A parallel scan shows rows per process (loops): together they produced rows × loops.
  const seqScans = [
    ...text.matchAll(
      /(Parallel )?Seq Scan on (\w+)(?: \w+)?\s+\(cost=[^)]*\)\s+\(actual time=[\d.]+\.\.[\d.]+ rows=([\d.]+) loops=(\d+)/g,
    ),
  ].map((m) => ({
    table: m[2]!,
    rows: Math.round(Number(m[3]) * (m[1] ? Number(m[4]) : 1)),
  }));
  const indexes = [
    ...new Set(
      [...text.matchAll(/(?:Index (?:Only )?Scan(?: Backward)? using|Bitmap Index Scan on) (\w+)/g)].map((m) => m[1]!),
    ),
  ];
  const ms = Number(/Execution Time: ([\d.]+) ms/.exec(text)?.[1] ?? NaN);
  return { sql: sql.replace(/\s+/g, ' ').trim(), text, seqScans, indexes, ms };
}

/** One line on a plan: what it reads, and whether it scans a table it should not. */
export function describePlan(plan: Plan): string {
  const scans = plan.seqScans.map((s) => `${s.table} (${s.rows} rows)`);
  return `indexes: ${plan.indexes.join(', ') || 'none'}; seq scans: ${scans.join(', ') || 'none'}`;
}

export const LEDGER_TABLES = ['navigation_events', 'elicitation_navigations'];
