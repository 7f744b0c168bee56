import type { Pool, PoolClient } from './pool.js';

/** Runs fn in a transaction on a client of the pool: COMMIT on return, ROLLBACK on throw. */
export async function withTransaction<T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await inTransaction(client, fn);
  } finally {
    client.release();
  }
}

/** The same on a client the caller holds (e.g. one that keeps a session-level lock). */
export async function inTransaction<T>(client: PoolClient, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
