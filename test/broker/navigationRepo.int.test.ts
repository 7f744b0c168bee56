import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advance } from '../../src/broker/advance.js';
import { findNavigationById, insertNavigation } from '../../src/broker/navigationRepo.js';
import { navigationStates, transitions, type NavigationState } from '../../src/flow/navigationStates.js';
import { withTransaction } from '../../src/db/transaction.js';
import { ConflictError } from '../../src/errors/appError.js';
import { findEntries } from '../../src/ledger/ledgerRepo.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

const navigation = (status: NavigationState) => navigationFixture(status);

describe('navigation repository', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });
  const by = { actor: 'test', now: new Date() };

  it.each(transitions.map((t) => [t.from, t.event, t.to] as const))(
    'persists %s --%s--> %s with its ledger entry in one transaction',
    async (from, event, to) => {
      const row = navigation(from);
      await insertNavigation(db.pool, row);
      const updated = await withTransaction(db.pool, (tx) => advance(tx, row, event, by));
      expect(updated).toMatchObject({ status: to, rowVersion: 2 });
      expect((await findNavigationById(db.pool, row.id))?.status).toBe(to);
      expect(await findEntries(db.pool, row.id)).toEqual([
        expect.objectContaining({ fromStatus: from, toStatus: to, event, actor: 'test' }),
      ]);
    },
  );

  it('refuses every pair the table lacks and writes nothing', async () => {
    const row = navigation('CREATED');
    await insertNavigation(db.pool, row);
    await expect(withTransaction(db.pool, (tx) => advance(tx, row, 'mrtr_accept', by))).rejects.toMatchObject({
      code: 'invalid_transition',
    });
    expect((await findNavigationById(db.pool, row.id))?.status).toBe('CREATED');
    expect(await findEntries(db.pool, row.id)).toEqual([]);
  });

  it('lets exactly one of two concurrent writers move the same row (compare-and-set)', async () => {
    const row = navigation('REQUIREMENT_VERIFIED');
    await insertNavigation(db.pool, row);
    const other = db.newPool();
    const results = await Promise.allSettled([
      withTransaction(db.pool, (tx) => advance(tx, row, 'mrtr_accept', by)),
      withTransaction(other, (tx) => advance(tx, row, 'error_retry_eligible', by)),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(ConflictError);
    expect(await findEntries(db.pool, row.id)).toHaveLength(1);
  });

  it('refuses a status outside the machine at the database too', async () => {
    const row = { ...navigation('CREATED'), status: 'DONE' as NavigationState };
    await expect(insertNavigation(db.pool, row)).rejects.toThrow(/check constraint/);
    expect(navigationStates).not.toContain('DONE');
  });

  it('keeps the ledger append-only: UPDATE, DELETE and TRUNCATE are refused', async () => {
    const row = navigation('CREATED');
    await insertNavigation(db.pool, row);
    await withTransaction(db.pool, (tx) => advance(tx, row, 'present', by));
    await expect(
      db.pool.query("UPDATE navigation_events SET actor = 'x' WHERE navigation_id = $1", [row.id]),
    ).rejects.toThrow(/append-only/);
    await expect(db.pool.query('DELETE FROM navigation_events WHERE navigation_id = $1', [row.id])).rejects.toThrow(
      /append-only/,
    );
    await expect(db.pool.query('TRUNCATE navigation_events CASCADE')).rejects.toThrow(/append-only/);
    expect(await findEntries(db.pool, row.id)).toHaveLength(1);
  });
});

describe('advance through a chain of events', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('moves with one compare-and-set and writes one ledger entry per step, in order', async () => {
    const row = navigation('OUT_OF_BAND_PENDING');
    await insertNavigation(db.pool, row);
    const updated = await withTransaction(db.pool, (tx) =>
      advance(tx, row, ['callback_received', 'callback_verified'], { actor: 'test', now: new Date() }),
    );
    expect(updated).toMatchObject({ status: 'REQUIREMENT_VERIFIED', rowVersion: 2 });
    expect((await findEntries(db.pool, row.id)).map((e) => [e.fromStatus, e.event, e.toStatus])).toEqual([
      ['OUT_OF_BAND_PENDING', 'callback_received', 'COMPLETION_NOTIFIED'],
      ['COMPLETION_NOTIFIED', 'callback_verified', 'REQUIREMENT_VERIFIED'],
    ]);
  });

  it('refuses the whole chain when one step is not in the table, and writes nothing', async () => {
    const row = navigation('OUT_OF_BAND_PENDING');
    await insertNavigation(db.pool, row);
    await expect(
      withTransaction(db.pool, (tx) =>
        advance(tx, row, ['callback_received', 'mrtr_accept'], { actor: 'test', now: new Date() }),
      ),
    ).rejects.toMatchObject({ code: 'invalid_transition' });
    expect((await findNavigationById(db.pool, row.id))?.status).toBe('OUT_OF_BAND_PENDING');
    expect(await findEntries(db.pool, row.id)).toEqual([]);
  });
});
