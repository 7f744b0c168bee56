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
  /**
   * Through a transaction-mode pooler (the PgBouncer pass), a pool straight to Postgres on the same
   * schema, for what needs a session of its own (an instance's LISTEN, the migrations' advisory
   * lock), as DATABASE_DIRECT_URL is for the broker; otherwise undefined: `pool` has sessions.
   */
  newDirectPool(): Pool | undefined;
  /** Through the run's transaction-mode pooler: the URL `pool` and `newPool()` use (the schema's role), else undefined. */
  pooledUrl: Secret | undefined;
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

/**
 * A fresh schema in the run's Postgres; `migrate` applies the real migrations unless told not to.
 * In the PgBouncer pass (test/support/globalDb.ts provides `poolerUrl`) the pools go through the
 * pooler in transaction mode, where no session setting survives a transaction: they log in as a
 * role of the schema's name whose search_path is that schema (the pooler keeps a pool per role),
 * and the migrations and the listeners go straight to Postgres.
 */
export async function createTestDb(options: TestDbOptions = {}): Promise<TestDb> {
  const url = new Secret(options.url ?? inject('databaseUrl'));
  const pooler = options.url === undefined && options.poolUrl === undefined ? inject('poolerUrl') : '';
  const poolUrl = options.poolUrl === undefined ? url : new Secret(options.poolUrl);
  const schema = `test_${randomBytes(6).toString('hex')}`;
  await admin(url, `CREATE SCHEMA ${schema}`);
  const logger = createLogger({ level: 'silent' });
  const pools: Pool[] = [];
  const track = (p: Pool) => (pools.push(p), p);
  let newPool = () => track(createPool({ url: poolUrl, poolMax: 5, schema }, logger));
  let newDirectPool = (): Pool | undefined => undefined;
  let pooledUrl: Secret | undefined;
  if (pooler) {
    // Loopback only, a throwaway role per schema, dropped with it.
    await admin(url, `CREATE ROLE ${schema} LOGIN SUPERUSER; ALTER ROLE ${schema} SET search_path = ${schema}`);
    const through = new URL(pooler);
    through.username = schema;
    through.password = '';
    pooledUrl = new Secret(through.href);
    newPool = () => track(createPool({ url: pooledUrl!, poolMax: 5, pooled: true }, logger));
    newDirectPool = () => track(createPool({ url, poolMax: 2, schema }, logger));
  }
  const pool = newPool();
  if (options.migrate !== false) await migrate(newDirectPool() ?? pool);
  return {
    pool,
    schema,
    url,
    newPool,
    newDirectPool,
    pooledUrl,
    async drop() {
      await Promise.all(pools.map((p) => p.end()));
      await admin(url, `DROP SCHEMA ${schema} CASCADE`);
      // The pooler may still hold a server connection of the role for a while: then the role stays.
      if (pooler) await admin(url, `DROP ROLE ${schema}`).catch(() => undefined);
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
