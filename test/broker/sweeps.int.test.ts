import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advance } from '../../src/broker/advance.js';
import { findNavigationById, insertNavigation } from '../../src/broker/navigationRepo.js';
import { canTransition, navigationStates, type NavigationState } from '../../src/flow/navigationStates.js';
import { NONCE_GRACE_MS } from '../../src/jobs/sweepRepo.js';
import { sweepOnce } from '../../src/jobs/sweeps.js';
import { withTransaction } from '../../src/db/transaction.js';
import { findEntries } from '../../src/ledger/ledgerRepo.js';
import { claimNonce } from '../../src/notes/mrtrNonceRepo.js';
import { createLogger } from '../../src/shared/logger.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

const logger = createLogger({ level: 'silent' });

/** The outcome a claimed nonce's row records, read from the table; undefined once the row is gone. */
async function findNonceOutcome(pool: TestDb['pool'], digest: Buffer): Promise<string | undefined> {
  return (await pool.query<{ outcome: string }>('SELECT outcome FROM mrtr_nonces WHERE nonce_digest = $1', [digest]))
    .rows[0]?.outcome;
}

async function seed(db: TestDb, status: NavigationState, expiresInMs: number): Promise<string> {
  const now = new Date();
  const n = navigationFixture('CREATED', {
    createdAt: new Date(now.getTime() - 1_000_000),
    expiresAt: new Date(now.getTime() + expiresInMs),
  });
  await insertNavigation(db.pool, n);
  const steps = {
    CREATED: [],
    USER_REVIEW: ['present'],
    NAVIGATION_ACCEPTED: ['present', 'host_accept'],
    OUT_OF_BAND_PENDING: ['present', 'host_accept', 'browser_consent'],
    REQUIREMENT_VERIFIED: ['present', 'host_accept', 'browser_consent', 'callback_received', 'callback_verified'],
  } as const;
  const events = steps[status as keyof typeof steps];
  if (events.length > 0) await withTransaction(db.pool, (tx) => advance(tx, n, events, { actor: 'seed', now }));
  return n.id;
}

describe('sweeps', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('expires overdue open flows through the transition table, each with its ledger entry, and leaves the rest', async () => {
    const overdue = await Promise.all(
      ['USER_REVIEW', 'NAVIGATION_ACCEPTED', 'OUT_OF_BAND_PENDING'].map((s) => seed(db, s as NavigationState, -1000)),
    );
    const fresh = await seed(db, 'OUT_OF_BAND_PENDING', 600_000);
    const verified = await seed(db, 'REQUIREMENT_VERIFIED', -1000);
    const result = await sweepOnce({ pool: db.pool, clock: { now: () => new Date() }, logger });
    expect(result.expiredNavigations).toBe(3);
    for (const id of overdue) {
      expect((await findNavigationById(db.pool, id))?.status).toBe('EXPIRED');
      expect((await findEntries(db.pool, id)).at(-1)).toMatchObject({
        event: 'expire',
        toStatus: 'EXPIRED',
        actor: 'system:sweep',
      });
    }
    expect((await findNavigationById(db.pool, fresh))?.status).toBe('OUT_OF_BAND_PENDING');
    expect((await findNavigationById(db.pool, verified))?.status).toBe('REQUIREMENT_VERIFIED');
  });

  it('expires each flow once when several instances sweep at the same time', async () => {
    const ids = await Promise.all(Array.from({ length: 30 }, () => seed(db, 'USER_REVIEW', -1000)));
    const pools = [db.pool, db.newPool(), db.newPool()];
    const results = await Promise.all(
      pools.map((pool) => sweepOnce({ pool, clock: { now: () => new Date() }, logger }, { batch: 20 })),
    );
    const again = await sweepOnce({ pool: db.pool, clock: { now: () => new Date() }, logger }, { batch: 20 });
    expect(results.reduce((n, r) => n + r.expiredNavigations, 0) + again.expiredNavigations).toBe(30);
    for (const id of ids) expect((await findEntries(db.pool, id)).filter((e) => e.event === 'expire')).toHaveLength(1);
  });

  it('deletes spent transactions, nonces and sessions, and only those', async () => {
    const past = new Date(Date.now() - 60_000);
    const future = new Date(Date.now() + 600_000);
    const created = new Date(Date.now() - 120_000);
    const pastGrace = new Date(Date.now() - NONCE_GRACE_MS - 60_000);
    await db.pool.query(
      `INSERT INTO mrtr_nonces (nonce_digest, principal_iss, principal_sub, purpose, outcome, expires_at) VALUES ($1, 'i', 's', 'p', 'deleted', $2), ($3, 'i', 's', 'p', 'deleted', $4)`,
      [randomBytes(32), pastGrace, randomBytes(32), future],
    );
    await db.pool.query(
      `INSERT INTO web_sessions (id_digest, created_at, expires_at) VALUES ($1, $2, $3), ($4, $2, $5)`,
      [randomBytes(32), created, past, randomBytes(32), future],
    );
    const result = await sweepOnce({ pool: db.pool, clock: { now: () => new Date() }, logger });
    expect(result).toMatchObject({ nonces: 1, sessions: 1 });
    expect((await db.pool.query('SELECT count(*)::int AS n FROM mrtr_nonces')).rows[0].n).toBe(1);
    expect((await db.pool.query('SELECT count(*)::int AS n FROM web_sessions')).rows[0].n).toBe(1);
  });

  it('keeps a nonce past its expiry for the grace, so an instance with a lagging clock still finds it spent', async () => {
    const digest = randomBytes(32);
    const principal = { iss: 'https://idp.test', sub: 'alice' };
    const expiresAt = new Date(Date.now() - 60_000);
    expect(
      await claimNonce(db.pool, {
        nonceDigest: digest,
        principal,
        purpose: 'notes_delete',
        outcome: 'declined',
        expiresAt,
      }),
    ).toBe(true);
    await sweepOnce({ pool: db.pool, clock: { now: () => new Date() }, logger });
    expect(await findNonceOutcome(db.pool, digest)).toBe('declined');
    expect(
      await claimNonce(db.pool, {
        nonceDigest: digest,
        principal,
        purpose: 'notes_delete',
        outcome: 'deleted',
        expiresAt,
      }),
    ).toBe(false);
    await sweepOnce({ pool: db.pool, clock: { now: () => new Date(Date.now() + NONCE_GRACE_MS) }, logger });
    expect(await findNonceOutcome(db.pool, digest)).toBeUndefined();
  });
});

describe('the expiry sweep over every state', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('expires overdue flows in exactly the states the transition table lets expire', async () => {
    const past = Date.now() - 60_000;
    const seeded = navigationStates.map((status) =>
      navigationFixture(status, {
        createdAt: new Date(past - 60_000),
        expiresAt: new Date(past),
        updatedAt: new Date(past),
      }),
    );
    for (const n of seeded) await insertNavigation(db.pool, n);
    await sweepOnce({ pool: db.pool, clock: { now: () => new Date() }, logger });
    const after = await Promise.all(
      seeded.map(async (n) => [n.status, (await findNavigationById(db.pool, n.id))?.status]),
    );
    expect(after).toEqual(seeded.map((n) => [n.status, canTransition(n.status, 'expire') ? 'EXPIRED' : n.status]));
  });
});

describe('sweeps keep up with a backlog', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  const expiredSessions = async (n: number) => {
    const created = new Date(Date.now() - 120_000);
    const past = new Date(Date.now() - 60_000);
    await db.pool.query(
      `INSERT INTO web_sessions (id_digest, created_at, expires_at) SELECT sha256(convert_to(gen_random_uuid()::text, 'utf8')), $1, $2 FROM generate_series(1, $3)`,
      [created, past, n],
    );
  };
  const count = async (table: string) =>
    (await db.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;

  it('clears far more than 100 rows in one run, in bounded batches, within its time budget', async () => {
    await expiredSessions(5_000);
    await db.pool.query(
      `INSERT INTO mrtr_nonces (nonce_digest, principal_iss, principal_sub, purpose, outcome, expires_at) SELECT sha256(convert_to(gen_random_uuid()::text, 'utf8')), 'i', 's', 'p', 'deleted', $1 FROM generate_series(1, 1500)`,
      [new Date(Date.now() - NONCE_GRACE_MS - 60_000)],
    );
    const started = performance.now();
    const result = await sweepOnce(
      { pool: db.pool, clock: { now: () => new Date() }, logger },
      { batch: 500, budgetMs: 20_000 },
    );
    const elapsed = performance.now() - started;
    expect(result).toMatchObject({ sessions: 5_000, nonces: 1_500 });
    expect(elapsed).toBeLessThan(20_000);
    expect([await count('web_sessions'), await count('mrtr_nonces')]).toEqual([0, 0]);
  });

  it('stops at its time budget and leaves the rest to the next run, one batch per table at least', async () => {
    await expiredSessions(1_000);
    const first = await sweepOnce(
      { pool: db.pool, clock: { now: () => new Date() }, logger },
      { batch: 100, budgetMs: 0 },
    );
    expect(first.sessions).toBe(100);
    expect(await count('web_sessions')).toBe(900);
    const next = await sweepOnce({ pool: db.pool, clock: { now: () => new Date() }, logger });
    expect(next.sessions).toBe(900);
  });
});
