import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionStates } from '../../src/secrets/connectionStates.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// Connection states live twice: in src/secrets/connectionStates.ts and in the migrations' CHECK on
// connections.state (SQL cannot import the table). A state added to one and not the other fails
// here, not in production.
describe('the database knows the same connection states as connectionStates.ts', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('allows exactly connectionStates in the CHECK constraint on connections.state', async () => {
    const { rows } = await db.pool.query<{ def: string }>(
      `SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
         JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
        WHERE c.conrelid = 'connections'::regclass AND c.contype = 'c' AND a.attname = 'state' AND cardinality(c.conkey) = 1`,
    );
    expect(rows).toHaveLength(1);
    const list = /\bstate = ANY \(ARRAY\[([^\]]*)\]\)/.exec(rows[0]!.def);
    expect(list, rows[0]!.def).not.toBeNull();
    const allowed = [...list![1]!.matchAll(/'([^']+)'::text/g)].map((m) => m[1]!);
    expect(allowed.sort()).toEqual([...connectionStates].sort());
  });
});
