import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { advance } from '../../src/broker/advance.js';
import { withTransaction } from '../../src/db/transaction.js';
import { verifyChain } from '../../src/ledger/ledgerRepo.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

const navigation = () => navigationFixture();

describe('the ledger hash chain', () => {
  let db: TestDb;
  beforeEach(async () => {
    db = await createTestDb();
    // Three flows, each moved a few steps, some concurrently: 9 ledger rows.
    await Promise.all(
      [0, 1, 2].map(async () => {
        const n = navigation();
        await insertNavigation(db.pool, n);
        const reviewed = await withTransaction(db.pool, (tx) =>
          advance(tx, n, 'present', { actor: 'test', now: new Date() }),
        );
        await withTransaction(db.pool, (tx) =>
          advance(tx, reviewed, ['host_accept', 'browser_consent'], { actor: 'test', now: new Date() }),
        );
      }),
    );
  });
  afterEach(async () => {
    await db.drop();
  });

  // The append-only trigger refuses UPDATE and DELETE; an attacker with owner rights could disable it, as here.
  const tamper = async (sql: string) => {
    await db.pool.query('ALTER TABLE navigation_events DISABLE TRIGGER navigation_events_no_update');
    await db.pool.query(sql);
    await db.pool.query('ALTER TABLE navigation_events ENABLE TRIGGER navigation_events_no_update');
  };

  it('chains every row, concurrent writers included, and verifies clean', async () => {
    const { rows } = await db.pool.query('SELECT chain_seq FROM navigation_events ORDER BY chain_seq');
    expect(rows.map((r) => Number(r.chain_seq))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await verifyChain(db.pool)).toEqual({ rows: 9, firstBreak: undefined });
  });

  it('names the first altered row', async () => {
    await tamper("UPDATE navigation_events SET actor = 'someone-else' WHERE chain_seq = 4");
    expect((await verifyChain(db.pool)).firstBreak).toMatchObject({ chainSeq: 4, reason: 'hash' });
  });

  it('names the row after a deleted one', async () => {
    await tamper('DELETE FROM navigation_events WHERE chain_seq = 6');
    expect((await verifyChain(db.pool)).firstBreak).toMatchObject({ chainSeq: 7, reason: 'gap' });
  });

  it('names a row whose recorded predecessor was swapped', async () => {
    await tamper(
      'UPDATE navigation_events SET prev_hash = (SELECT hash FROM navigation_events WHERE chain_seq = 1) WHERE chain_seq = 3',
    );
    expect((await verifyChain(db.pool)).firstBreak).toMatchObject({ chainSeq: 3 });
  });

  // verifyChain walks the chain in ranges; every break is found wherever it falls relative to a range's edge.
  it('reports its progress range by range', async () => {
    const seen: [number, number][] = [];
    expect(await verifyChain(db.pool, 4, (checked, last) => seen.push([checked, last]))).toEqual({
      rows: 9,
      firstBreak: undefined,
    });
    expect(seen).toEqual([
      [4, 9],
      [8, 9],
      [9, 9],
    ]);
  });

  it.each([1, 2, 3, 5])('gives the same answers when it checks the chain in ranges of %i', async (chunk) => {
    expect(await verifyChain(db.pool, chunk)).toEqual({ rows: 9, firstBreak: undefined });
    await tamper('DELETE FROM navigation_events WHERE chain_seq IN (5, 6)');
    expect((await verifyChain(db.pool, chunk)).firstBreak).toMatchObject({ chainSeq: 7, reason: 'gap' });
    await tamper('UPDATE navigation_events SET evidence = \'{"forged": true}\' WHERE chain_seq = 3');
    expect((await verifyChain(db.pool, chunk)).firstBreak).toMatchObject({ chainSeq: 3, reason: 'hash' });
    await tamper('DELETE FROM navigation_events WHERE chain_seq IN (1, 2)');
    expect((await verifyChain(db.pool, chunk)).firstBreak).toMatchObject({ chainSeq: 3 });
  });
});
