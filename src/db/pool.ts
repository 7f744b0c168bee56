import pg from 'pg';
import type { Logger } from '../shared/logger.js';
import type { Secret } from '../shared/secret.js';
import { unnamed } from './prepared.js';

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
  /** How long a request waits for a connection, new or from the pool, before it is answered 503. */
  connectTimeoutMs?: number;
  /**
   * The URL is a transaction-mode pooler (PgBouncer): each transaction may run on another server
   * connection, so nothing is set for the session. PgBouncer refuses startup parameters it does not
   * track (statement_timeout, options), so only application_name is sent; the statement timeout is
   * then the pooler's or the role's (docs/scaling.md), and `schema` is refused.
   */
  pooled?: boolean;
}

/**
 * The one pool factory: bounded statements and waits, a recognisable application_name, and
 * connection failures that end the connection, never the process.
 */
export function createPool(config: PoolConfig, logger: Logger): pg.Pool {
  if (config.schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(config.schema)) throw new Error('invalid schema name');
  if (config.pooled && config.schema !== undefined) throw new Error('a pooled connection cannot set a schema');
  const pool = new pg.Pool({
    connectionString: config.url.reveal(),
    max: config.poolMax,
    application_name: 'connect-broker',
    ...(config.pooled ? {} : { statement_timeout: config.statementTimeoutMs ?? 15_000 }),
    // Only tests set a schema; otherwise `options` in DATABASE_URL (e.g. a search_path) is kept.
    ...(config.schema ? { options: `-c search_path=${config.schema}` } : {}),
    // Bounds both a new connection to a server that does not answer and the wait for a pooled
    // one, so that during an outage a request is answered 503 within seconds, not left hanging.
    connectionTimeoutMillis: config.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    // A peer gone silent (a partition, not a refusal) is found by TCP keepalive; without it an
    // idle connection such as the completion listener's would wait on a dead socket for good.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // pg attaches the whole Client (its buffers, settings and state) to the error: log what it says, not that.
  const describe = (err: Error) => ({ error: err.message, sqlState: (err as { code?: unknown }).code });
  // An idle client losing its connection must not crash the process.
  pool.on('error', (err) => logger.warn(describe(err), 'idle database connection failed'));
  // Nor may a checked-out one: pg-pool listens only while a client is idle, and a connection lost
  // under a transaction (a restart sends 57P01 to every backend) is an 'error' event nobody
  // handles. The query in flight fails with the same error, and release() drops the connection.
  const onLost = (err: Error) => logger.warn(describe(err), 'database connection lost');
  pool.on('acquire', (client) => client.on('error', onLost));
  // A transaction-mode pooler runs each transaction on any server connection: a statement prepared
  // on one is unknown on the next, so prepared.ts's statements are sent unnamed there.
  if (config.pooled)
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      client.query = ((first: unknown, ...rest: unknown[]) => query(unnamed(first), ...rest)) as typeof client.query;
    });
  pool.on('release', (_err, client) => client.off('error', onLost));
  return pool;
}
