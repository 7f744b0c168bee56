import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { prepared } from '../../src/db/prepared.js';
import { createLogger } from '../../src/shared/logger.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// A hot path's statement is prepared once per connection, except where the pool talks to a
// transaction-mode pooler, which would run the next execution on a connection that never saw it.
describe('prepared statements', () => {
  let db: TestDb;
  let direct: Pool;
  let pooled: Pool;
  const logger = createLogger({ level: 'silent' });
  const statement = () => prepared('SELECT $1::int + 1 AS n', [41]);
  const preparedHere = async (pool: Pool) => {
    const client = await pool.connect();
    try {
      const { rows } = await client.query<{ n: number }>(statement());
      const named = await client.query<{ name: string }>('SELECT name FROM pg_prepared_statements');
      return { n: rows[0]!.n, names: named.rows.map((r) => r.name) };
    } finally {
      client.release();
    }
  };

  beforeAll(async () => {
    db = await createTestDb({ migrate: false });
    direct = createPool({ url: db.url, poolMax: 1 }, logger);
    // What the broker does through PgBouncer; Postgres itself stands in for it here.
    pooled = createPool({ url: db.url, poolMax: 1, pooled: true }, logger);
  });
  afterAll(async () => {
    await direct.end();
    await pooled.end();
    await db.drop();
  });

  it('are kept on the connection, under a name the text decides', async () => {
    const first = await preparedHere(direct);
    const again = await preparedHere(direct);
    expect(first.n).toBe(42);
    expect(again).toEqual(first);
    expect(first.names).toEqual([statement().name]);
    expect(prepared('SELECT 2', []).name).not.toBe(statement().name);
  });

  it('are sent unnamed through a transaction-mode pooler', async () => {
    const run = await preparedHere(pooled);
    expect(run).toEqual({ n: 42, names: [] });
  });
});
