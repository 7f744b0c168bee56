import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { appendEntries, type LedgerEntry } from '../../src/ledger/ledgerRepo.js';
import { LATENCY_BOUNDS_SECONDS } from '../../src/ops/charts.js';
import {
  countFlowsByState,
  countFlowsPerDay,
  findCompletionLatencyHistogram,
  findReissuedFrom,
} from '../../src/ops/dashboardRepo.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// The dashboard's aggregates on a small, exactly known ledger.
describe('dashboard aggregates', () => {
  let db: TestDb;
  const at = (iso: string) => new Date(iso);
  const flow = (status: Parameters<typeof navigationFixture>[0], created: string) =>
    navigationFixture(status, {
      createdAt: at(created),
      updatedAt: at(created),
      expiresAt: new Date(at(created).getTime() + 900_000),
    });
  const a = flow('MRTR_RETRY_ACCEPTED', '2026-03-01T23:59:59.999Z');
  const b = flow('REQUIREMENT_VERIFIED', '2026-03-02T00:00:00.000Z');
  const c = flow('EXPIRED', '2026-03-02T12:00:00.000Z');
  const old = flow('EXPIRED', '2026-02-01T12:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDb();
    for (const n of [a, b, c, old]) await insertNavigation(db.pool, n);
    await insertNavigation(db.pool, flow('USER_REVIEW', '2026-03-05T08:00:00.000Z'), c.id);
    const step = (id: string, from: string, to: string, event: string, iso: string): LedgerEntry => ({
      navigationId: id,
      fromStatus: from,
      toStatus: to,
      event,
      actor: 'test',
      evidence: {},
      at: at(iso),
    });
    await appendEntries(db.pool, [
      // a: 3 s from pending to verified, then an event recorded without moving (not a second verification).
      step(a.id, 'NAVIGATION_ACCEPTED', 'OUT_OF_BAND_PENDING', 'browser_consent', '2026-03-02T00:01:00Z'),
      step(a.id, 'OUT_OF_BAND_PENDING', 'COMPLETION_NOTIFIED', 'callback_received', '2026-03-02T00:01:02Z'),
      step(a.id, 'COMPLETION_NOTIFIED', 'REQUIREMENT_VERIFIED', 'callback_verified', '2026-03-02T00:01:03Z'),
      step(a.id, 'REQUIREMENT_VERIFIED', 'REQUIREMENT_VERIFIED', 'approval_requested', '2026-03-02T00:09:00Z'),
      // b: 90 s; a duplicate pending entry recorded without moving does not restart the clock.
      step(b.id, 'NAVIGATION_ACCEPTED', 'OUT_OF_BAND_PENDING', 'browser_consent', '2026-03-02T00:10:00Z'),
      step(b.id, 'OUT_OF_BAND_PENDING', 'OUT_OF_BAND_PENDING', 'callback_refused', '2026-03-02T00:11:00Z'),
      step(b.id, 'COMPLETION_NOTIFIED', 'REQUIREMENT_VERIFIED', 'callback_verified', '2026-03-02T00:11:30Z'),
      // c: never verified.
      step(c.id, 'NAVIGATION_ACCEPTED', 'OUT_OF_BAND_PENDING', 'browser_consent', '2026-03-02T12:01:00Z'),
    ]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('counts flows by state', async () => {
    expect(Object.fromEntries(await countFlowsByState(db.pool))).toEqual({
      MRTR_RETRY_ACCEPTED: 1,
      REQUIREMENT_VERIFIED: 1,
      EXPIRED: 2,
      USER_REVIEW: 1,
    });
  });

  it('counts flows per UTC day from the first instant given', async () => {
    const days = await countFlowsPerDay(db.pool, at('2026-03-01T00:00:00Z'));
    expect(days).toEqual([
      { day: '2026-03-01', count: 1 },
      { day: '2026-03-02', count: 2 },
      { day: '2026-03-05', count: 1 },
    ]);
    // `since` is an instant: b (created at midnight) falls before it, c after.
    expect(await countFlowsPerDay(db.pool, at('2026-03-02T00:00:00.001Z'))).toEqual([
      { day: '2026-03-02', count: 1 },
      { day: '2026-03-05', count: 1 },
    ]);
  });

  it('buckets completion → verified seconds of the newest verifications, each flow once', async () => {
    const both = await findCompletionLatencyHistogram(db.pool, LATENCY_BOUNDS_SECONDS, 10);
    // 3 s is in (2, 5] (bucket 2); 90 s in (60, 120] (bucket 6).
    expect(both).toEqual({
      buckets: [
        { bucket: 2, count: 1 },
        { bucket: 6, count: 1 },
      ],
      sample: 2,
    });
    // The window keeps the newest: b was verified after a.
    expect(await findCompletionLatencyHistogram(db.pool, LATENCY_BOUNDS_SECONDS, 1)).toEqual({
      buckets: [{ bucket: 6, count: 1 }],
      sample: 1,
    });
  });

  it('names the flow a re-issued one replaces', async () => {
    const { rows } = await db.pool.query('SELECT id FROM elicitation_navigations WHERE reissued_from IS NOT NULL');
    expect(await findReissuedFrom(db.pool, rows[0].id)).toBe(c.id);
    expect(await findReissuedFrom(db.pool, c.id)).toBeUndefined();
  });
});
