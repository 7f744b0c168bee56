import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../src/db/embeddedPostgres.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Pool, type PoolConfig } from '../src/db/pool.js';
import type { Logger } from '../src/shared/logger.js';
import type { Secret } from '../src/shared/secret.js';
import type { BrokerModules } from './brokerModules.js';

export interface BenchDb {
  /**
   * A new pool on the bench schema (each server gets its own, as a deployment would), made by
   * `form`'s createPool when given (a broker's pool, in that broker's code form).
   */
  newPool(form?: Pick<BrokerModules, 'createPool' | 'Secret'>): Pool;
  close(): Promise<void>;
}

// The broker's default DATABASE_POOL_MAX (src/config/config.ts).
const POOL_MAX = 10;

/**
 * A migrated schema of its own, in `url` when given (dropped at the end), else
 * in an embedded Postgres cluster under `dir` (stopped at the end).
 */
export async function openBenchDb(url: Secret | undefined, dir: string, logger: Logger): Promise<BenchDb> {
  const embedded = url
    ? undefined
    : await startEmbeddedPostgres(join(dir, 'postgres'), logger.child({ component: 'postgres' }));
  const dbUrl = url ?? embedded?.url;
  if (!dbUrl) throw new Error('no database: set DATABASE_URL or let the bench start embedded Postgres');
  const schema = `bench_${randomBytes(6).toString('hex')}`;
  const pools: ClosablePool[] = [];
  const open = (config: PoolConfig, form?: Pick<BrokerModules, 'createPool' | 'Secret'>): Pool => {
    const pool = closablePool(
      form
        ? form.createPool({ ...config, url: new form.Secret(config.url.reveal()) }, logger)
        : createPool(config, logger),
    );
    pools.push(pool);
    return pool;
  };
  const closeAll = async () => {
    await Promise.all(pools.map((p) => p.endAndWait()));
    await embedded?.stop();
  };
  try {
    const admin = open({ url: dbUrl, poolMax: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
    const newPool = (form?: Pick<BrokerModules, 'createPool' | 'Secret'>) =>
      open({ url: dbUrl, poolMax: POOL_MAX, schema }, form);
    await migrate(newPool());
    return {
      newPool,
      async close() {
        await admin
          .query(`DROP SCHEMA ${schema} CASCADE`)
          .catch((err: unknown) => logger.warn({ err }, 'could not drop the bench schema'));
        await closeAll();
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

type ClosablePool = Pool & { endAndWait(): Promise<void> };

// pool.end() resolves before its connections have closed; stopping Postgres
// right after would cut them and log a failure. This waits for every socket.
function closablePool(pool: Pool): ClosablePool {
  const closed: Promise<void>[] = [];
  pool.on('connect', (client) => closed.push(new Promise((resolve) => client.once('end', () => resolve()))));
  return Object.assign(pool, {
    async endAndWait() {
      await pool.end();
      await Promise.all(closed);
    },
  });
}
