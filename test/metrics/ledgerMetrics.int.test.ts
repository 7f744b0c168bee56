import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advance } from '../../src/broker/advance.js';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { createPool } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/transaction.js';
import { appendEntry } from '../../src/ledger/ledgerRepo.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/shared/logger.js';
import { familyLines, sampleValue } from '../support/metricsText.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

const logger = createLogger({ level: 'silent' });
const LEDGER_FAMILIES = ['broker_flow_transitions_total', 'broker_completion_to_verified_seconds'];

/** One flow: OUT_OF_BAND_PENDING at t0, REQUIREMENT_VERIFIED `seconds` later. */
async function seedVerified(db: TestDb, seconds: number): Promise<void> {
  const t0 = new Date(Date.UTC(2026, 0, 1, 12, 0, 0));
  const n = navigationFixture('CREATED', { createdAt: t0, updatedAt: t0 });
  await insertNavigation(db.pool, n);
  const pending = await withTransaction(db.pool, (tx) =>
    advance(tx, n, ['present', 'host_accept', 'browser_consent'], { actor: 'seed', now: t0 }),
  );
  await withTransaction(db.pool, (tx) =>
    advance(tx, pending, ['callback_received', 'callback_verified'], {
      actor: 'seed',
      now: new Date(t0.getTime() + seconds * 1000),
    }),
  );
}

describe('ledger-derived metrics (flow transitions, completion latency)', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('counts every ledger entry once and buckets completion latency exactly, incrementally and after a restart alike', async () => {
    const running = createMetrics({ pool: db.pool, logger, processMetrics: false });
    const empty = await running.registry.metrics();
    expect(sampleValue(empty, 'broker_completion_to_verified_seconds_count')).toBe(0);

    for (const s of [0.25, 1, 1.5]) await seedVerified(db, s);
    const first = await running.registry.metrics();
    expect(
      sampleValue(first, 'broker_flow_transitions_total', {
        event: 'callback_verified',
        to_status: 'REQUIREMENT_VERIFIED',
      }),
    ).toBe(3);
    for (const s of [120, 130, 700]) await seedVerified(db, s);

    const text = await running.registry.metrics();
    expect(await running.registry.metrics()).toBe(text); // scraping again counts nothing twice
    const expected = await db.pool.query<{ event: string; to_status: string; n: number }>(
      'SELECT event, to_status, count(*)::int AS n FROM navigation_events GROUP BY 1, 2',
    );
    expect(expected.rows.length).toBeGreaterThanOrEqual(5);
    for (const r of expected.rows)
      expect(sampleValue(text, 'broker_flow_transitions_total', { event: r.event, to_status: r.to_status })).toBe(r.n);

    // Prometheus `le`: a value equal to a bound (1 s, 120 s) belongs to that bound.
    const cumulative = { '0.5': 1, '1': 2, '2': 3, '90': 3, '120': 4, '180': 5, '600': 5, '+Inf': 6 };
    for (const [le, n] of Object.entries(cumulative))
      expect(sampleValue(text, 'broker_completion_to_verified_seconds_bucket', { le }), `le=${le}`).toBe(n);
    expect(sampleValue(text, 'broker_completion_to_verified_seconds_count')).toBe(6);
    expect(sampleValue(text, 'broker_completion_to_verified_seconds_sum')).toBeCloseTo(952.75, 6);

    // A restarted process catches up over the history, and concurrent first scrapes read it once.
    const restarted = createMetrics({ pool: db.newPool(), logger, processMetrics: false });
    const scrapes = await Promise.all([
      restarted.registry.metrics(),
      restarted.registry.metrics(),
      restarted.registry.metrics(),
    ]);
    for (const s of scrapes) expect(familyLines(s, ...LEDGER_FAMILIES)).toEqual(familyLines(text, ...LEDGER_FAMILIES));
  });

  // Writers share no lock, so a transaction that wrote first may commit last; counting by the
  // snapshots the rows committed in, the scrape after its COMMIT still counts its row, once.
  it('counts a row whose transaction commits after a later one was already counted', async () => {
    const metrics = createMetrics({ pool: db.newPool(), logger, processMetrics: false });
    const [early, late] = [navigationFixture(), navigationFixture()];
    for (const n of [early, late]) await insertNavigation(db.pool, n);
    const probe = (navigationId: string) => ({
      navigationId,
      fromStatus: 'CREATED',
      toStatus: 'CREATED',
      event: 'probe',
      actor: 'test',
      evidence: {},
      at: new Date(),
    });
    const probes = async () =>
      sampleValue(await metrics.registry.metrics(), 'broker_flow_transitions_total', {
        event: 'probe',
        to_status: 'CREATED',
      });
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await appendEntry(holder, probe(early.id));
      await appendEntry(db.pool, probe(late.id));
      expect(await probes()).toBe(1);
      await holder.query('COMMIT');
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
    expect(await probes()).toBe(2);
    expect(await probes()).toBe(2);
  });

  it('serves the last figures and counts the failure when the database cannot be read', async () => {
    const pool = createPool({ url: db.url, poolMax: 1, schema: db.schema }, logger);
    const metrics = createMetrics({ pool, logger, processMetrics: false });
    await pool.end();
    const text = await metrics.registry.metrics();
    expect(sampleValue(text, 'broker_metrics_collect_errors_total', { source: 'ledger' })).toBe(1);
    expect(sampleValue(text, 'broker_metrics_collect_errors_total', { source: 'gates' })).toBe(1);
    expect(sampleValue(text, 'broker_completion_to_verified_seconds_count')).toBe(0);
  });
});
