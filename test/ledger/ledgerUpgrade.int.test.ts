import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { migrate, migrationsDir, readMigrations } from '../../src/db/migrate.js';
import { findLatestAnchor, writeAnchor } from '../../src/ledger/anchorRepo.js';
import { verifyChain } from '../../src/ledger/chainVerifyRepo.js';
import { appendEntry } from '../../src/ledger/ledgerRepo.js';
import { moveThreeFlows } from '../support/ledgerFlows.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// A database written under the global chain (migrations/0004) and then upgraded: its rows are
// re-chained per flow and sealed by the first anchor, with what the old chain's last check found.
describe('upgrading a ledger from the global chain to per-flow chains', () => {
  let before: string;
  let db: TestDb;
  beforeAll(async () => {
    const files = await readMigrations();
    const ours = files.find((f) => f.name.endsWith('_flow_chains.sql'))!;
    before = await mkdtemp(join(tmpdir(), 'ledger-upgrade-'));
    for (const f of files.filter((f) => f.id < ours.id))
      await copyFile(join(migrationsDir, f.name), join(before, f.name));
  });
  afterAll(async () => {
    await rm(before, { recursive: true, force: true });
  });
  afterEach(async () => {
    await db.drop();
  });

  /** Three flows moved concurrently under the old chain; their rows in the old chain's order. */
  const seedOld = async () => {
    db = await createTestDb({ migrate: false });
    await migrate(db.pool, before);
    // Today's code writes the flows, and names the columns later migrations add: they stand in for
    // the seed and go again, so the upgrade below adds them as it would.
    await db.pool.query('ALTER TABLE elicitation_navigations ADD COLUMN trace_parent text');
    await moveThreeFlows(db.pool);
    await db.pool.query('ALTER TABLE elicitation_navigations DROP COLUMN trace_parent');
    const { rows } = await db.pool.query<{ id: string; navigation_id: string }>(
      'SELECT id, navigation_id FROM navigation_events ORDER BY chain_seq',
    );
    return rows;
  };

  it('verifies after the upgrade, keeps each flow in its old order, and goes on chaining', async () => {
    const old = await seedOld();
    await migrate(db.pool);
    expect(await verifyChain(db.pool)).toMatchObject({ rows: 9, flows: 3, anchors: 1, firstBreak: undefined });
    const { rows } = await db.pool.query<{ id: string; navigation_id: string }>(
      'SELECT id, navigation_id FROM navigation_events ORDER BY navigation_id, flow_seq',
    );
    const byFlow = (r: { id: string; navigation_id: string }[]) =>
      [...new Set(r.map((e) => e.navigation_id))]
        .sort()
        .map((f) => r.filter((e) => e.navigation_id === f).map((e) => e.id));
    expect(byFlow(rows)).toEqual(byFlow(old));
    const first = await db.pool.query('SELECT flows, legacy FROM ledger_anchors WHERE seq = 1');
    expect(first.rows[0]).toMatchObject({ flows: 3, legacy: { rows: 9, headSeq: 9, firstBreak: null } });
    const exported = (await findLatestAnchor(db.pool))!;

    const flow = old[0]!.navigation_id;
    await appendEntry(db.pool, {
      navigationId: flow,
      fromStatus: 'OUT_OF_BAND_PENDING',
      toStatus: 'OUT_OF_BAND_PENDING',
      event: 'probe',
      actor: 'test',
      evidence: {},
      at: new Date(),
    });
    const next = await db.pool.query<{ flow_seq: string; linked: boolean }>(
      `SELECT e.flow_seq, e.prev_hash = p.hash AS linked FROM navigation_events e
         JOIN navigation_events p ON p.navigation_id = e.navigation_id AND p.flow_seq = e.flow_seq - 1
        WHERE e.navigation_id = $1 AND e.event = 'probe'`,
      [flow],
    );
    expect(next.rows).toEqual([{ flow_seq: '4', linked: true }]);
    expect(await writeAnchor(db.pool, new Date())).toBe(2);
    expect(await verifyChain(db.pool, { anchor: exported })).toMatchObject({
      rows: 10,
      anchors: 2,
      firstBreak: undefined,
    });
  });

  it('still reports a break the old chain had when it was re-chained', async () => {
    await seedOld();
    await db.pool.query('ALTER TABLE navigation_events DISABLE TRIGGER navigation_events_no_update');
    await db.pool.query("UPDATE navigation_events SET actor = 'someone-else' WHERE chain_seq = 4");
    await db.pool.query('ALTER TABLE navigation_events ENABLE TRIGGER navigation_events_no_update');
    await migrate(db.pool);
    expect((await verifyChain(db.pool)).firstBreak).toEqual({
      reason: 'legacy',
      anchorSeq: 1,
      legacy: { chainSeq: 4, reason: 'hash' },
    });
  });

  it('starts an empty ledger with no anchor', async () => {
    db = await createTestDb({ migrate: false });
    await migrate(db.pool, before);
    await migrate(db.pool);
    expect(await verifyChain(db.pool)).toEqual({
      rows: 0,
      flows: 0,
      anchors: 0,
      anchorChecked: undefined,
      firstBreak: undefined,
    });
  });
});
