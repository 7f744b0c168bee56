import pg from 'pg';
import type { Logger } from '../shared/logger.js';
import type { Secret } from '../shared/secret.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** What a repo function needs: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

export interface PoolConfig {
  url: Secret;
  poolMax: number;
  /** Sets search_path for every connection (tests: one schema per file). */
  schema?: string;
  statementTimeoutMs?: number;
}

/** The one pool factory: bounded statements and a recognisable application_name. */
export function createPool(config: PoolConfig, logger: Logger): pg.Pool {
  if (config.schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(config.schema)) throw new Error('invalid schema name');
  const pool = new pg.Pool({
    connectionString: config.url.reveal(),
    max: config.poolMax,
    application_name: 'connect-broker',
    statement_timeout: config.statementTimeoutMs ?? 15_000,
    // Only tests set a schema; otherwise `options` in DATABASE_URL (e.g. a search_path) is kept.
    ...(config.schema ? { options: `-c search_path=${config.schema}` } : {}),
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection must not crash the process.
  // pg attaches the whole Client (its buffers, settings and state) to the error: log what it says, not that.
  pool.on('error', (err) =>
    logger.warn({ error: err.message, sqlState: (err as { code?: unknown }).code }, 'idle database connection failed'),
  );
  return pool;
}
