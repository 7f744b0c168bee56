import { Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isConnectionLoss } from '../../src/db/connectionLoss.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/transaction.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

describe('the pool when Postgres goes away', () => {
  let db: TestDb;
  let proxy: TcpProxy;
  let pool: Pool;
  const lines: string[] = [];
  const logger = createLogger(
    { level: 'warn' },
    new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString('utf8')), done()) }),
  );

  beforeAll(async () => {
    db = await createTestDb({ migrate: false });
    await db.pool.query('CREATE TABLE probe (n int)');
    const direct = new URL(db.url.reveal());
    proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    pool = createPool(
      { url: new Secret(proxy.via(db.url.reveal())), poolMax: 2, schema: db.schema, connectTimeoutMs: 1_000 },
      logger,
    );
  });
  afterAll(async () => {
    await pool.end();
    await proxy.close();
    await db.drop();
  });

  it('fails the statement of a transaction whose connection is ended, and the process lives on', async () => {
    // What a restart of Postgres does to every backend: 57P01, then the socket closes.
    const failure = await withTransaction(pool, async (tx) => {
      await tx.query('INSERT INTO probe VALUES (1)');
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await db.pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await new Promise((r) => setTimeout(r, 200)); // the error event arrives while nothing runs on it
      await tx.query('INSERT INTO probe VALUES (2)');
    }).catch((err: unknown) => err);

    expect(isConnectionLoss(failure)).toBe(true);
    expect((await db.pool.query('SELECT count(*)::int AS n FROM probe')).rows[0].n).toBe(0);
    expect(lines.join('')).toContain('database connection lost');
    // The dead connection left the pool: the next transaction gets a new one.
    await withTransaction(pool, (tx) => tx.query('INSERT INTO probe VALUES (3)'));
    expect((await db.pool.query('SELECT n FROM probe')).rows).toEqual([{ n: 3 }]);
  });

  it('fails at once when the database refuses, within the connect timeout when it does not answer, and recovers', async () => {
    await proxy.cut();
    let started = Date.now();
    const refused = await pool.query('SELECT 1').catch((err: unknown) => err);
    expect(isConnectionLoss(refused)).toBe(true);
    expect(Date.now() - started).toBeLessThan(500);

    await proxy.stall();
    started = Date.now();
    const silent = await pool.query('SELECT 1').catch((err: unknown) => err);
    expect(isConnectionLoss(silent)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(Date.now() - started).toBeLessThan(2_000);

    await proxy.restore();
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('is told apart from a failed statement', async () => {
    const failed = await pool.query('SELECT * FROM no_such_table').catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(pg.DatabaseError);
    expect(isConnectionLoss(failed)).toBe(false);
  });
});
