import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import {
  insertReceiptOnce,
  markOutcomeUnknown,
  recordOutcome,
  takePerformLease,
} from '../../src/broker/receiptRepo.js';
import { appendEntries, type LedgerEntry } from '../../src/ledger/ledgerRepo.js';
import { LATENCY_BOUNDS_SECONDS } from '../../src/ops/charts.js';
import {
  countConnectionsByProvider,
  countFlowsByState,
  countFlowsPerDay,
  countReceiptsByProvider,
  findCompletionLatencyHistogram,
  findReissuedFrom,
} from '../../src/ops/dashboardRepo.js';
import { insertConnection, moveConnection } from '../../src/secrets/connectionsRepo.js';
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

// The upstream rows' figures: only the providers asked for, each counted in Postgres.
describe('dashboard aggregates per upstream', () => {
  let db: TestDb;
  const now = new Date('2026-03-02T12:00:00.000Z');
  const subject = (sub: string) => ({ iss: 'https://idp.test', sub });

  beforeAll(async () => {
    db = await createTestDb();
    const connect = (sub: string, provider: string, account?: string) =>
      insertConnection(
        db.pool,
        {
          subject: subject(sub),
          provider,
          upstreamSubject: account,
          upstreamName: undefined,
          grantedScopes: [],
          metadata: {},
          apiBase: undefined,
          navigationId: undefined,
        },
        now,
      );
    // alice holds two accounts' connections at memo, bob one, carol one that needs her again; dave is at the Report Service.
    await connect('alice', 'memo', 'work');
    await connect('alice', 'memo', 'home');
    await connect('bob', 'memo');
    const carol = await connect('carol', 'memo');
    await moveConnection(db.pool, { id: carol.id, event: 'token_refused', now });
    await connect('dave', 'reports');

    // Receipts of memo's flows: two done, one failed, one whose answer was lost, one still running; one of the Report Service's.
    const receipt = async (provider: string) => {
      const flow = navigationFixture('MRTR_RETRY_ACCEPTED', { provider });
      await insertNavigation(db.pool, flow);
      const { receipt: r } = await insertReceiptOnce(db.pool, {
        id: randomUUID(),
        operationKey: randomUUID(),
        navigationId: flow.id,
        lineage: 'mrtr',
        jsonrpcId: undefined,
        retryGeneration: undefined,
        requirementReceipt: 'test',
        createdAt: now,
      });
      return r.id;
    };
    for (const status of ['succeeded', 'succeeded', 'failed'] as const)
      await recordOutcome(db.pool, await receipt('memo'), status, {}, 'digest', now);
    const lost = await receipt('memo');
    const performer = randomUUID();
    await takePerformLease(db.pool, lost, performer, now, new Date(now.getTime() + 60_000));
    await markOutcomeUnknown(db.pool, lost, performer, now);
    await receipt('memo');
    await recordOutcome(db.pool, await receipt('reports'), 'succeeded', {}, 'digest', now);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('counts users and live connections apart, and those that need the user again', async () => {
    const counts = await countConnectionsByProvider(db.pool, ['memo', 'linear']);
    expect([...counts]).toEqual([['memo', { users: 2, connections: 3, needsReauth: 1 }]]);
  });

  it('counts accepted calls by outcome, an unknown one apart from one still running', async () => {
    const counts = await countReceiptsByProvider(db.pool, ['memo', 'linear']);
    expect([...counts]).toEqual([['memo', { succeeded: 2, failed: 1, unknown: 1, pending: 1 }]]);
  });
});
