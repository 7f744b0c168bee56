import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completableStates,
  completionEvents,
  flowLineages,
  lineages,
  navigationStates,
  openStates,
} from '../../src/flow/navigationStates.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// The states live twice: in the transition table and in the migrations' CHECK
// constraints and partial indexes (SQL cannot import the table). A state added to
// one and not the other fails here, not in production.
describe('the database knows the same navigation states as the transition table', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  /** The CHECK constraints on exactly this column, as Postgres prints them. */
  const checksOn = async (table: string, column: string) => {
    const { rows } = await db.pool.query<{ name: string; def: string }>(
      `SELECT c.conname AS name, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
         JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
        WHERE c.conrelid = $1::regclass AND c.contype = 'c' AND a.attname = $2 AND cardinality(c.conkey) = 1
        ORDER BY c.conname`,
      [table, column],
    );
    return rows;
  };
  /** The predicate of a partial index, as Postgres prints it. */
  const predicateOf = async (index: string) => {
    const { rows } = await db.pool.query<{ pred: string }>(
      `SELECT pg_get_expr(indpred, indrelid) AS pred FROM pg_index WHERE indexrelid = $1::regclass`,
      [index],
    );
    return rows[0]!.pred;
  };
  /** The strings of `column = ANY (ARRAY['A'::text, …])` (or `<> ALL`): what a CHECK or an index predicate lists. */
  const listed = (sql: string, column: string, op = '= ANY') => {
    const list = new RegExp(`\\b${column} ${op} \\(ARRAY\\[([^\\]]*)\\]\\)`).exec(sql);
    expect(list, `${column} ${op} (ARRAY[…]) in ${sql}`).not.toBeNull();
    return [...list![1]!.matchAll(/'([^']+)'::text/g)].map((m) => m[1]!);
  };
  const expectSameStates = (allowed: readonly string[], expected: Iterable<string>, what: string) => {
    const table = [...expected];
    expect(
      table.filter((s) => !allowed.includes(s)),
      `states of the table that ${what} leaves out`,
    ).toEqual([]);
    expect(
      allowed.filter((s) => !table.includes(s)),
      `states ${what} names that the table lacks`,
    ).toEqual([]);
  };

  it('allows exactly navigationStates in the CHECK constraint on elicitation_navigations.status', async () => {
    const checks = await checksOn('elicitation_navigations', 'status');
    expect(checks.map((c) => c.name)).toEqual(['elicitation_navigations_status_check']);
    expect(checks[0]!.def).toMatch(/^CHECK \(\(status = ANY \(ARRAY\[.*\]\)\)\)$/);
    expectSameStates(listed(checks[0]!.def, 'status'), navigationStates, 'the CHECK on elicitation_navigations.status');
  });

  it("holds any CHECK on the ledger's from_status and to_status to the same states", async () => {
    // Up to migrations/0011 the ledger's columns carry none (advance() writes only states of the
    // table); a constraint added later must agree with the table.
    for (const column of ['from_status', 'to_status']) {
      for (const check of await checksOn('navigation_events', column))
        expectSameStates(listed(check.def, column), navigationStates, `navigation_events.${check.name}`);
    }
  });

  it('indexes the open flows by exactly openStates, the list the open-flow queries pass', async () => {
    expectSameStates(
      listed(await predicateOf('elicitation_navigations_open_idx'), 'status'),
      openStates,
      'elicitation_navigations_open_idx',
    );
  });

  it('indexes the out-of-order completions by completionEvents and completableStates', async () => {
    const pred = await predicateOf('navigation_events_unexpected_completion_idx');
    expect(listed(pred, 'event').sort()).toEqual([...completionEvents].sort());
    expectSameStates(
      listed(pred, 'from_status', '<> ALL'),
      completableStates,
      'navigation_events_unexpected_completion_idx',
    );
  });

  it('allows a flow every lineage and a receipt only the lineages of a host call, the lists navigationStates.ts names', async () => {
    const [flow] = await checksOn('elicitation_navigations', 'lineage');
    expect(listed(flow!.def, 'lineage').sort()).toEqual([...flowLineages].sort());
    const [receipt] = await checksOn('operation_receipts', 'lineage');
    expect(listed(receipt!.def, 'lineage').sort()).toEqual([...lineages].sort());
  });

  it("names only states of the table in the ledger's single-state indexes", async () => {
    for (const index of ['navigation_events_pending_idx', 'navigation_events_verified_idx']) {
      const [, state] = /^\(to_status = '([^']+)'::text\)$/.exec(await predicateOf(index)) ?? [];
      expect(navigationStates, index).toContain(state);
    }
  });
});
