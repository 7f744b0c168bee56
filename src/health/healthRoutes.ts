import { Router } from 'express';
import { migrationStatus, type MigrationFile } from '../db/migrate.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../shared/logger.js';

export interface HealthDeps {
  pool: Pool;
  migrations: MigrationFile[];
  logger: Logger;
}

/** GET /healthz: the process answers. GET /readyz: the database answers and every migration is applied. */
export function healthRoutes(deps: HealthDeps): Router {
  const router = Router();

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  router.get('/readyz', async (_req, res) => {
    try {
      const status = await migrationStatus(deps.pool, deps.migrations);
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
