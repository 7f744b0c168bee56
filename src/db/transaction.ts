import { SpanKind } from '@opentelemetry/api';
import { inSpan } from '../telemetry/spans.js';
import type { Pool, PoolClient } from './pool.js';

// A transaction is a span (its wait for a connection included); its statements are not: SQL text and values stay out.
const TRANSACTION_SPAN = { 'db.system.name': 'postgresql', 'db.operation.name': 'transaction' };

/** Runs fn in a transaction on a client of the pool: COMMIT on return, ROLLBACK on throw. */
export function withTransaction<T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  return inSpan(
    'db transaction',
    TRANSACTION_SPAN,
    async () => {
      const client = await pool.connect();
      try {
        return await inTransaction(client, fn);
      } finally {
        client.release();
      }
    },
    { kind: SpanKind.CLIENT },
  );
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
