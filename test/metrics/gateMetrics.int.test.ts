import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advance } from '../../src/broker/advance.js';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { withTransaction } from '../../src/db/transaction.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/shared/logger.js';
import { sampleValue } from '../support/metricsText.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

const logger = createLogger({ level: 'silent' });

describe('gate gauges', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('report n/a as NaN while there are no flows, and are recomputed at most once per cache period', async () => {
    let now = 1_000_000;
    const metrics = createMetrics({
      pool: db.pool,
      logger,
      processMetrics: false,
      gateCacheMs: 30_000,
      now: () => now,
    });
    const empty = await metrics.registry.metrics();
    expect(sampleValue(empty, 'broker_gate_pass', { gate: 'consent_receipts' })).toBe(1);
    expect(sampleValue(empty, 'broker_gate_consent_share')).toBeNaN();
    expect(sampleValue(empty, 'broker_gate_completion_to_verified_seconds', { quantile: '0.99' })).toBeNaN();

    // An expired flow with no operation accepted: recoverable.
    const n = navigationFixture('CREATED');
    await insertNavigation(db.pool, n);
    await withTransaction(db.pool, (tx) => advance(tx, n, ['present', 'expire'], { actor: 'seed', now: new Date() }));

    now += 29_000;
    expect(sampleValue(await metrics.registry.metrics(), 'broker_gate_expired_flows')).toBe(0); // cached
    now += 2_000;
    const fresh = await metrics.registry.metrics();
    expect(sampleValue(fresh, 'broker_gate_expired_flows')).toBe(1);
    expect(sampleValue(fresh, 'broker_gate_expired_recoverable_flows')).toBe(1);
    expect(sampleValue(fresh, 'broker_gate_pass', { gate: 'expired_recoverable' })).toBe(1);
  });
});
