import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { startSweeper, type SweepResult } from '../../src/jobs/sweeps.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

describe('background jobs while Postgres goes away and comes back', () => {
  let db: TestDb;
  let proxy: TcpProxy;
  let pool: Pool;
  const lines: string[] = [];
  const logger = createLogger(
    { level: 'info' },
    new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString('utf8')), done()) }),
  );

  beforeAll(async () => {
    db = await createTestDb();
    const direct = new URL(inject('databaseUrl'));
    proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    pool = createPool(
      { url: new Secret(proxy.via(direct.href)), poolMax: 2, schema: db.schema, connectTimeoutMs: 1_000 },
      logger,
    );
  });
  afterAll(async () => {
    await pool.end();
    await proxy.close();
    await db.drop();
  });

  it('logs a sweep cut inside its transaction and the sweeps that find it gone, and sweeps again once it is back', async () => {
    const succeeded: SweepResult[] = [];
    let failed = 0;
    const sweeper = startSweeper(
      {
        pool,
        clock: systemClock,
        logger,
        onSweep: (result) => succeeded.push(result),
        onSweepFailed: () => failed++,
      },
      100,
    );
    try {
      await expect.poll(() => succeeded.length, { timeout: 5_000 }).toBeGreaterThan(0);
      // The next sweep's first statement, inside its transaction: the connection is cut under it.
      await proxy.cutWhen(['FOR NO KEY UPDATE SKIP LOCKED']);
      const before = succeeded.length;
      await expect.poll(() => failed, { timeout: 5_000 }).toBeGreaterThanOrEqual(3);
      expect(succeeded.length).toBe(before);
      await proxy.restore();
      await expect.poll(() => succeeded.length, { timeout: 5_000 }).toBeGreaterThan(before);
    } finally {
      await sweeper.stop();
    }
    const logged = lines.map((l) => JSON.parse(l) as { msg: string });
    expect(logged.filter((l) => l.msg === 'sweep failed; the next one retries').length).toBe(failed);
    expect(logged.some((l) => l.msg === 'database connection lost')).toBe(true);
    console.log(`background jobs across an outage: ${failed} sweeps failed and logged, ${succeeded.length} succeeded`);
  });
});
