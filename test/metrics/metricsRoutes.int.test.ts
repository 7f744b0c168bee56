import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.js';
import { metricsRoutes, type MetricsAccess } from '../../src/metrics/metricsRoutes.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { errorHandler, requestId } from '../../src/web/middleware/requestContext.js';
import { createRender } from '../../src/web/render.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

const logger = createLogger({ level: 'silent' });

describe('who may read GET /metrics', () => {
  let db: TestDb;
  const servers: Server[] = [];
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    await db.drop();
  });

  async function serve(access: MetricsAccess): Promise<string> {
    const metrics = createMetrics({ pool: db.pool, logger, processMetrics: false });
    const app = express()
      .use(requestId())
      .use(metricsRoutes({ metrics, access }))
      .use(errorHandler({ logger, render: createRender({ cache: false }), addressOf: () => '127.0.0.1' }));
    const server = createServer(app).listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise((r) => server.once('listening', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  }

  it('is open without METRICS_TOKEN in development', async () => {
    const response = await fetch(await serve({ token: undefined, openWithoutToken: true }));
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('# TYPE broker_flow_transitions_total counter');
  });

  it('is off without METRICS_TOKEN in production: 403 saying what to set', async () => {
    const url = await serve({ token: undefined, openWithoutToken: false });
    const response = await fetch(url, {
      headers: { accept: 'application/json', authorization: 'Bearer anything-at-all-anything-at-all' },
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({
      error: 'forbidden',
      message: expect.stringContaining('set METRICS_TOKEN'),
    });
  });

  it('with METRICS_TOKEN, wants it as a bearer even where it would otherwise be open', async () => {
    const token = 'a-metrics-token-of-thirty-two-characters-or-more';
    const url = await serve({ token: new Secret(token), openWithoutToken: true });
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });
});
