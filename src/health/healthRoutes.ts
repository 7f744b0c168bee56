import { Router } from 'express';
import { migrationStatus, type MigrationFile, type MigrationStatus } from '../db/migrate.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../shared/logger.js';

export interface HealthDeps {
  pool: Pool;
  migrations: MigrationFile[];
  logger: Logger;
  /** How long /readyz waits for the database before it says not ready (default 2 s). */
  readyTimeoutMs?: number;
}

// Below the probe timeouts of load balancers and orchestrators (Kubernetes: 1 s by default, often
// raised to a few): a database that does not answer is an answer, and must come in time.
const READY_TIMEOUT_MS = 2_000;

/** GET /healthz: the process answers. GET /readyz: the database answers, in time, and every migration is applied. */
export function healthRoutes(deps: HealthDeps): Router {
  const router = Router();
  const timeoutMs = deps.readyTimeoutMs ?? READY_TIMEOUT_MS;

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  router.get('/readyz', async (_req, res) => {
    try {
      const status = await withinTime(migrationStatus(deps.pool, deps.migrations), timeoutMs);
      const body = {
        status: status.current ? 'ready' : 'not_ready',
        database: 'ok',
        migrations: { current: status.current, applied: status.applied, expected: status.expected },
      };
      res.status(status.current ? 200 : 503).json(body);
    } catch (err) {
      deps.logger.warn({ err }, 'readiness check failed');
      res.status(503).json({ status: 'not_ready', database: 'unreachable' });
    }
  });

  return router;
}

// The check itself runs on (bounded by the pool's connect and statement timeouts); only the answer stops waiting.
function withinTime(check: Promise<MigrationStatus>, ms: number): Promise<MigrationStatus> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the database did not answer within ${ms} ms`)), ms);
  });
  check.catch(() => undefined);
  return Promise.race([check, late]).finally(() => clearTimeout(timer));
}
