import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { advance } from '../../src/broker/advance.js';
import type { PoolClient } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/transaction.js';
import { appendEntry } from '../../src/ledger/ledgerRepo.js';
import { findLatestAnchor, writeAnchor } from '../../src/ledger/anchorRepo.js';
import { verifyChain } from '../../src/ledger/chainVerifyRepo.js';
import { moveThreeFlows } from '../support/ledgerFlows.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

describe("the ledger's hash chains and anchors", () => {
  let db: TestDb;
  let flows: string[];
  beforeEach(async () => {
    db = await createTestDb();
    flows = await moveThreeFlows(db.pool);
  });
  afterEach(async () => {
    await db.drop();
  });

  // The append-only triggers refuse UPDATE and DELETE; an attacker with owner rights could disable them, as here.
  const tamper = async (sql: string, params: unknown[] = [], table = 'navigation_events') => {
    await db.pool.query(`ALTER TABLE ${table} DISABLE TRIGGER USER`);
    await db.pool.query(sql, params);
    await db.pool.query(`ALTER TABLE ${table} ENABLE TRIGGER USER`);
  };
  const breakOf = async (options?: Parameters<typeof verifyChain>[1]) =>
    (await verifyChain(db.pool, options)).firstBreak;

  it("chains each flow's events on their own, concurrent writers included, and verifies clean", async () => {
    const { rows } = await db.pool.query<{ navigation_id: string; flow_seq: string; linked: boolean }>(
      `SELECT navigation_id, flow_seq,
              prev_hash IS NOT DISTINCT FROM lag(hash) OVER (PARTITION BY navigation_id ORDER BY flow_seq) AS linked
         FROM navigation_events ORDER BY navigation_id, flow_seq`,
    );
    expect(rows.map((r) => [r.navigation_id, Number(r.flow_seq), r.linked])).toEqual(
      flows.flatMap((f) => [1, 2, 3].map((seq) => [f, seq, true])),
    );
    const heads = await db.pool.query('SELECT navigation_id, seq::int FROM ledger_heads ORDER BY navigation_id');
    expect(heads.rows).toEqual(flows.map((f) => ({ navigation_id: f, seq: 3 })));
    expect(await verifyChain(db.pool)).toEqual({
      rows: 9,
      flows: 3,
      anchors: 0,
      anchorChecked: undefined,
      firstBreak: undefined,
    });
  });

  it('names an altered event', async () => {
    await tamper("UPDATE navigation_events SET actor = 'someone-else' WHERE navigation_id = $1 AND flow_seq = 2", [
      flows[1],
    ]);
    expect(await breakOf()).toMatchObject({ reason: 'hash', navigationId: flows[1], flowSeq: 2 });
  });

  it('names the event after a deleted one, the first event included', async () => {
    await tamper('DELETE FROM navigation_events WHERE navigation_id = $1 AND flow_seq = 1', [flows[2]]);
    expect(await breakOf()).toMatchObject({ reason: 'gap', navigationId: flows[2], flowSeq: 2 });
    await tamper('DELETE FROM navigation_events WHERE navigation_id = $1 AND flow_seq = 2', [flows[0]]);
    expect(await breakOf()).toMatchObject({ reason: 'gap', navigationId: flows[0], flowSeq: 3 });
  });

  it('names an event whose recorded predecessor was swapped', async () => {
    await tamper(
      `UPDATE navigation_events SET prev_hash = (SELECT hash FROM navigation_events WHERE navigation_id = $1 AND flow_seq = 1)
        WHERE navigation_id = $1 AND flow_seq = 3`,
      [flows[0]],
    );
    expect(await breakOf()).toMatchObject({ navigationId: flows[0], flowSeq: 3 });
  });

  it("detects a flow's events put in another order", async () => {
    for (const [from, to] of [
      [1, 100],
      [2, 1],
      [100, 2],
    ])
      await tamper('UPDATE navigation_events SET flow_seq = $2 WHERE navigation_id = $1 AND flow_seq = $3', [
        flows[1],
        to,
        from,
      ]);
    expect(await breakOf()).toMatchObject({ reason: 'hash', navigationId: flows[1], flowSeq: 1 });
  });

  it("detects a flow's newest events deleted, and all of them, against its head", async () => {
    await tamper('DELETE FROM navigation_events WHERE navigation_id = $1 AND flow_seq = 3', [flows[1]]);
    expect(await breakOf()).toEqual({
      reason: 'truncated',
      navigationId: flows[1],
      flowSeq: 2,
      headSeq: 3,
      id: expect.any(Number),
    });
    await tamper('DELETE FROM navigation_events WHERE navigation_id = $1', [flows[0]]);
    expect(await breakOf()).toEqual({ reason: 'truncated', navigationId: flows[0], flowSeq: 0, headSeq: 3 });
  });

  it('refuses to move a head other than one event forward, or to delete it', async () => {
    await expect(
      db.pool.query('UPDATE ledger_heads SET seq = seq - 1 WHERE navigation_id = $1', [flows[0]]),
    ).rejects.toThrow(/UPDATE on ledger_heads refused/);
    await expect(db.pool.query('DELETE FROM ledger_heads')).rejects.toThrow(/DELETE on ledger_heads refused/);
    await writeAnchor(db.pool, new Date());
    await expect(db.pool.query('UPDATE ledger_anchors SET flows = 0')).rejects.toThrow(
      /UPDATE on ledger_anchors refused/,
    );
    await expect(db.pool.query('DELETE FROM ledger_anchor_heads')).rejects.toThrow(
      /DELETE on ledger_anchor_heads refused/,
    );
  });

  it('anchors seal the heads that moved since the last anchor, and only when something moved', async () => {
    expect(await writeAnchor(db.pool, new Date())).toBe(1);
    expect(await writeAnchor(db.pool, new Date())).toBeUndefined();
    const n = navigationFixture();
    await insertNavigation(db.pool, n);
    await withTransaction(db.pool, (tx) => advance(tx, n, 'present', { actor: 'test', now: new Date() }));
    expect(await writeAnchor(db.pool, new Date())).toBe(2);
    const sealed = await db.pool.query(
      'SELECT anchor_seq::int, navigation_id, flow_seq::int FROM ledger_anchor_heads ORDER BY anchor_seq, navigation_id',
    );
    expect(sealed.rows).toEqual([
      ...flows.map((f) => ({ anchor_seq: 1, navigation_id: f, flow_seq: 3 })),
      { anchor_seq: 2, navigation_id: n.id, flow_seq: 1 },
    ]);
    expect(await findLatestAnchor(db.pool)).toMatchObject({ seq: 2, flows: 1 });
    expect(await verifyChain(db.pool)).toMatchObject({ rows: 10, flows: 4, anchors: 2, firstBreak: undefined });
  });

  it('seals a window of more than 10,000 flows in anchors of at most 10,000, each checked on its own', async () => {
    // 10,001 more flows with an event each, written through the chain trigger.
    await db.pool.query(
      `INSERT INTO elicitation_navigations
       SELECT (jsonb_populate_record(NULL::elicitation_navigations, to_jsonb(n) || jsonb_build_object(
                 'id', gen_random_uuid(), 'handle_digest', '\\x' || encode(sha256(convert_to(g::text, 'UTF8')), 'hex')))).*
         FROM elicitation_navigations n, generate_series(1, 10001) g WHERE n.id = $1`,
      [flows[0]],
    );
    await db.pool.query(
      `INSERT INTO navigation_events (navigation_id, from_status, to_status, event, actor, evidence, created_at)
       SELECT id, status, status, 'probe', 'test', '{}', now() FROM elicitation_navigations WHERE id <> ALL($1)`,
      [flows],
    );
    expect(await writeAnchor(db.pool, new Date())).toBe(2);
    const anchors = await db.pool.query('SELECT seq::int, flows FROM ledger_anchors ORDER BY seq');
    expect(anchors.rows).toEqual([
      { seq: 1, flows: 10_000 },
      { seq: 2, flows: 4 },
    ]);
    // Ranges of 5,000 heads: the first anchor alone exceeds one and is still checked whole.
    expect(await breakOf({ chunk: 5_000 })).toBeUndefined();
    await tamper(
      `UPDATE ledger_anchor_heads SET hash = sha256(hash)
        WHERE anchor_seq = 2 AND navigation_id = (SELECT navigation_id FROM ledger_anchor_heads WHERE anchor_seq = 2 LIMIT 1)`,
      [],
      'ledger_anchor_heads',
    );
    expect(await breakOf({ chunk: 5_000 })).toEqual({ reason: 'anchor', anchorSeq: 2 });
  });

  it('detects an anchor altered, its sealed heads altered, or an anchor removed', async () => {
    await writeAnchor(db.pool, new Date());
    const n = navigationFixture();
    await insertNavigation(db.pool, n);
    await withTransaction(db.pool, (tx) => advance(tx, n, 'present', { actor: 'test', now: new Date() }));
    await writeAnchor(db.pool, new Date());
    await tamper('UPDATE ledger_anchors SET flows = flows + 1 WHERE seq = 2', [], 'ledger_anchors');
    expect(await breakOf()).toEqual({ reason: 'anchor', anchorSeq: 2 });
    await tamper('UPDATE ledger_anchors SET flows = flows - 1 WHERE seq = 2', [], 'ledger_anchors');
    expect(await breakOf()).toBeUndefined();
    await tamper(
      'UPDATE ledger_anchor_heads SET flow_seq = 2 WHERE anchor_seq = 1 AND navigation_id = $1',
      [flows[0]],
      'ledger_anchor_heads',
    );
    expect(await breakOf()).toEqual({ reason: 'anchor', anchorSeq: 1 });
    await tamper('DELETE FROM ledger_anchor_heads WHERE anchor_seq = 1', [], 'ledger_anchor_heads');
    await tamper('DELETE FROM ledger_anchors WHERE seq = 1', [], 'ledger_anchors');
    expect(await breakOf()).toEqual({ reason: 'anchor', anchorSeq: 2 });
  });

  // What the database alone cannot show: newest events removed with the head, the anchors and
  // every hash rewritten to match. An anchor exported before the tampering still shows it.
  it('detects a flow truncated below an anchored head, and a whole rewrite against an exported anchor', async () => {
    await writeAnchor(db.pool, new Date());
    const exported = (await findLatestAnchor(db.pool))!;
    const [victim] = flows;
    await tamper('DELETE FROM navigation_events WHERE navigation_id = $1 AND flow_seq = 3', [victim]);
    await tamper(
      `UPDATE ledger_heads h SET seq = e.flow_seq, prev_hash = e.prev_hash, hash = e.hash
         FROM navigation_events e WHERE e.navigation_id = h.navigation_id AND h.navigation_id = $1 AND e.flow_seq = 2`,
      [victim],
      'ledger_heads',
    );
    // The head agrees with the shortened chain, but anchor 1 sealed the flow at event 3.
    expect(await breakOf()).toEqual({ reason: 'anchored', anchorSeq: 1, navigationId: victim, flowSeq: 3 });

    await tamper('DELETE FROM ledger_anchor_heads', [], 'ledger_anchor_heads');
    await tamper('DELETE FROM ledger_anchors', [], 'ledger_anchors');
    expect(await writeAnchor(db.pool, new Date())).toBe(1);
    expect(await breakOf()).toBeUndefined();
    expect(await verifyChain(db.pool, { anchor: exported })).toMatchObject({
      anchorChecked: 1,
      firstBreak: { reason: 'export', anchorSeq: 1 },
    });
    // An anchor exported later than the database's last one: removed anchors.
    expect(await breakOf({ anchor: { seq: 2, hash: exported.hash } })).toEqual({ reason: 'export', anchorSeq: 2 });
  });

  it('verifies against the anchor exported, and later anchors extend it', async () => {
    await writeAnchor(db.pool, new Date());
    const exported = (await findLatestAnchor(db.pool))!;
    const n = navigationFixture();
    await insertNavigation(db.pool, n);
    await withTransaction(db.pool, (tx) => advance(tx, n, 'present', { actor: 'test', now: new Date() }));
    await writeAnchor(db.pool, new Date());
    expect(await verifyChain(db.pool, { anchor: exported })).toMatchObject({
      anchors: 2,
      anchorChecked: 1,
      firstBreak: undefined,
    });
  });

  it("does not make an append to one flow wait for another flow's open transaction", async () => {
    const holder = await db.pool.connect();
    const other = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await append(holder, flows[0]!);
      await other.query('BEGIN');
      // Waiting for any lock fails at once instead of queueing (55P03, lock_not_available).
      await other.query("SET LOCAL lock_timeout = '100ms'");
      await append(other, flows[1]!);
      await other.query('COMMIT');
      // The same flow does wait: its chain has one writer at a time.
      await other.query('BEGIN');
      await other.query("SET LOCAL lock_timeout = '100ms'");
      await expect(append(other, flows[0]!)).rejects.toMatchObject({ code: '55P03' });
      await other.query('ROLLBACK');
      await holder.query('COMMIT');
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
      other.release();
    }
    expect(await verifyChain(db.pool)).toMatchObject({ rows: 11, firstBreak: undefined });
  });

  it('writes an anchor beside an open append without waiting on it, and seals that append once it commits', async () => {
    const holder = await db.pool.connect();
    const anchorer = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await append(holder, flows[0]!);
      await anchorer.query("SET lock_timeout = '100ms'");
      const sealedAt = async (seq: number) =>
        (
          await db.pool.query<{ flow_seq: string }>(
            'SELECT flow_seq FROM ledger_anchor_heads WHERE anchor_seq = $1 AND navigation_id = $2',
            [seq, flows[0]],
          )
        ).rows.map((r) => Number(r.flow_seq));
      expect(await writeAnchor(anchorer, new Date())).toBe(1);
      expect(await sealedAt(1)).toEqual([3]);
      await holder.query('COMMIT');
      expect(await writeAnchor(anchorer, new Date())).toBe(2);
      expect(await sealedAt(2)).toEqual([4]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
      await anchorer.query('RESET lock_timeout');
      anchorer.release();
    }
    expect(await verifyChain(db.pool)).toMatchObject({ rows: 10, anchors: 2, firstBreak: undefined });
  });

  // verifyChain walks the flows in ranges of about `chunk` events; a break is found wherever it falls.
  it('reports its progress range by range', async () => {
    const seen: [number, number][] = [];
    expect(
      await verifyChain(db.pool, { chunk: 4, onProgress: (checked, total) => seen.push([checked, total]) }),
    ).toMatchObject({ rows: 9, firstBreak: undefined });
    // Whole flows per range: the fourth event opens the second flow, which the first range takes entire.
    expect(seen).toEqual([
      [6, 9],
      [9, 9],
    ]);
  });

  it.each([1, 2, 3, 5])('gives the same answers when it checks the flows in ranges of %i', async (chunk) => {
    await writeAnchor(db.pool, new Date());
    expect(await breakOf({ chunk })).toBeUndefined();
    await tamper('DELETE FROM navigation_events WHERE navigation_id = $1 AND flow_seq = 3', [flows[2]]);
    expect(await breakOf({ chunk })).toMatchObject({ reason: 'truncated', navigationId: flows[2] });
    await tamper(
      'UPDATE navigation_events SET evidence = \'{"forged": true}\' WHERE navigation_id = $1 AND flow_seq = 2',
      [flows[1]],
    );
    expect(await breakOf({ chunk })).toMatchObject({ reason: 'hash', navigationId: flows[1], flowSeq: 2 });
    await tamper('DELETE FROM navigation_events WHERE navigation_id = $1 AND flow_seq = 1', [flows[0]]);
    expect(await breakOf({ chunk })).toMatchObject({ reason: 'gap', navigationId: flows[0], flowSeq: 2 });
  });

  it('finds a sealed event removed in any range of the anchored heads', async () => {
    await writeAnchor(db.pool, new Date());
    await tamper('DELETE FROM navigation_events WHERE navigation_id = $1 AND flow_seq = 3', [flows[2]]);
    await tamper(
      `UPDATE ledger_heads h SET seq = 2, prev_hash = e.prev_hash, hash = e.hash
         FROM navigation_events e WHERE e.navigation_id = h.navigation_id AND h.navigation_id = $1 AND e.flow_seq = 2`,
      [flows[2]],
      'ledger_heads',
    );
    for (const chunk of [1, 2, 3, 5])
      expect(await breakOf({ chunk })).toEqual({
        reason: 'anchored',
        anchorSeq: 1,
        navigationId: flows[2],
        flowSeq: 3,
      });
  });
});

/** One entry through the ledger's own API, as recordWithoutMoving writes it. */
async function append(tx: PoolClient, navigationId: string) {
  await appendEntry(tx, {
    navigationId,
    fromStatus: 'NAVIGATION_ACCEPTED',
    toStatus: 'NAVIGATION_ACCEPTED',
    event: 'probe',
    actor: 'test',
    evidence: {},
    at: new Date(),
  });
}
