import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { healthRoutes } from '../../src/health/healthRoutes.js';
import { createLogger } from '../../src/shared/logger.js';
import { startTcpProxy } from '../support/tcpProxy.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

describe('health routes', () => {
  let db: TestDb | undefined;
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => server?.close(r));
    await db?.drop();
  });

  async function serve(testDb: TestDb): Promise<string> {
    const app = express().use(
      healthRoutes({
        pool: testDb.pool,
        migrations: await readMigrations(),
        logger: createLogger({ level: 'silent' }),
      }),
    );
    server = createServer(app).listen(0, '127.0.0.1');
    await new Promise((r) => server!.once('listening', r));
    return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  }

  it('answers /healthz while the process runs', async () => {
    db = await createTestDb({ migrate: false });
    const base = await serve(db);
    const response = await fetch(`${base}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('is not ready until every migration is applied, then ready', async () => {
    db = await createTestDb({ migrate: false });
    const base = await serve(db);
    const before = await fetch(`${base}/readyz`);
    expect(before.status).toBe(503);
    expect(await before.json()).toMatchObject({
      status: 'not_ready',
      database: 'ok',
      migrations: { current: false, applied: 0 },
    });
    await migrate(db.pool);
    const after = await fetch(`${base}/readyz`);
    expect(after.status).toBe(200);
    expect(await after.json()).toMatchObject({ status: 'ready', migrations: { current: true } });
  });

  it('says not ready within 2 s when the database does not answer, and ready again once it does', async () => {
    const direct = new URL(inject('databaseUrl'));
    const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    try {
      db = await createTestDb({ poolUrl: proxy.via(direct.href) });
      const base = await serve(db);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      // Connections accepted and never answered: the pool would wait its 5 s connect timeout.
      await proxy.stall();
      const started = Date.now();
      const stalled = await fetch(`${base}/readyz`);
      const elapsed = Date.now() - started;
      expect(stalled.status).toBe(503);
      expect(await stalled.json()).toEqual({ status: 'not_ready', database: 'unreachable' });
      expect(elapsed).toBeGreaterThanOrEqual(1_900);
      expect(elapsed).toBeLessThan(3_000);
      await proxy.restore();
      await expect.poll(async () => (await fetch(`${base}/readyz`)).status, { timeout: 10_000 }).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it('is not ready when the database does not answer', async () => {
    db = await createTestDb();
    const base = await serve(db);
    await db.pool.end();
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ status: 'not_ready', database: 'unreachable' });
    db = undefined; // its pool is closed; the schema goes with the run's database
  });
});
