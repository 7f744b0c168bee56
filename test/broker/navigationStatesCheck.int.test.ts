import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { navigationStates } from '../../src/broker/navigationStates.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// The states live twice: in the transition table and in the migrations' CHECK
// constraint. A state added to one and not the other fails here, not in production.
describe('the database knows the same navigation states as the transition table', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('allows exactly navigationStates in the CHECK constraint on elicitation_navigations.status', async () => {
    const { rows } = await db.pool.query<{ def: string }>(
      `SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
        WHERE c.conrelid = 'elicitation_navigations'::regclass AND c.contype = 'c' AND c.conname = 'elicitation_navigations_status_check'`,
    );
    expect(rows).toHaveLength(1);
    // Postgres prints `CHECK ((status = ANY (ARRAY['CREATED'::text, …])))`.
    const def = rows[0]!.def;
    expect(def).toMatch(/^CHECK \(\(status = ANY \(ARRAY\[.*\]\)\)\)$/);
    const allowed = [...def.matchAll(/'([^']+)'::text/g)].map((m) => m[1]);
    expect([...allowed].sort()).toEqual([...navigationStates].sort());
  });
});
