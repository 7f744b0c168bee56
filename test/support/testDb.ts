import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';

export interface TestDb {
  pool: Pool;
  schema: string;
  url: Secret;
  /** Another pool on the same schema (a second "instance"). */
  newPool(): Pool;
  drop(): Promise<void>;
}

export interface TestDbOptions {
  /** Apply the real migrations (default true). */
  migrate?: boolean;
  /** The server (default the run's Postgres): the schema is made and dropped there. */
  url?: string;
  /** The pools' way to that server, when not direct (e.g. through test/support/tcpProxy.ts). */
  poolUrl?: string;
}

/** A fresh schema in the run's Postgres; `migrate` applies the real migrations unless told not to. */
export async function createTestDb(options: TestDbOptions = {}): Promise<TestDb> {
  const url = new Secret(options.url ?? inject('databaseUrl'));
  const poolUrl = options.poolUrl === undefined ? url : new Secret(options.poolUrl);
  const schema = `test_${randomBytes(6).toString('hex')}`;
  await admin(url, `CREATE SCHEMA ${schema}`);
  const logger = createLogger({ level: 'silent' });
  const pools: Pool[] = [];
  const newPool = () => {
    const p = createPool({ url: poolUrl, poolMax: 5, schema }, logger);
    pools.push(p);
    return p;
  };
  const pool = newPool();
  if (options.migrate !== false) await migrate(pool);
  return {
    pool,
    schema,
    url,
    newPool,
    async drop() {
      await Promise.all(pools.map((p) => p.end()));
      await admin(url, `DROP SCHEMA ${schema} CASCADE`);
    },
  };
}

async function admin(url: Secret, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url.reveal() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
