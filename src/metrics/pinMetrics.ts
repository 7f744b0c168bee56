import { Gauge, type Registry } from 'prom-client';
import type { Queryable } from '../db/pool.js';
import type { Logger } from '../shared/logger.js';
import { listPins } from '../oauth/issuerPinsRepo.js';

export interface PinMetricsDeps {
  pool: Queryable;
  logger: Logger;
  collectFailed(source: string): void;
}

/**
 * `broker_authorization_server_changed`: 1 for each provider whose discovery named another
 * authorization server than the pinned one (src/upstream/issuerPin.ts) until an operator re-pins,
 * else 0 for each pinned one. Read from the database at scrape: cluster-wide, use max().
 */
export function registerPinMetrics(registry: Registry, deps: PinMetricsDeps): void {
  new Gauge({
    name: 'broker_authorization_server_changed',
    help: 'Per provider: 1 while its discovery names another authorization server than the one pinned (nothing is sent to it; broker upstreams repin), else 0. Cluster-wide: use max(), not sum().',
    labelNames: ['provider'] as const,
    registers: [registry],
    async collect() {
      try {
        const pins = await listPins(deps.pool);
        this.reset();
        for (const pin of pins) this.set({ provider: pin.provider }, pin.changedTo === undefined ? 0 : 1);
      } catch (err) {
        deps.logger.warn({ err }, 'metrics: reading the authorization server pins failed');
        deps.collectFailed('pins');
      }
    },
  });
}
