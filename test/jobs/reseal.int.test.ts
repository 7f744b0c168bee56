import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { argumentsAad } from '../../src/broker/acceptOriginalOperation.js';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { insertReceiptOnce } from '../../src/broker/receiptRepo.js';
import { handleAad } from '../../src/broker/startNavigation.js';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox, type SecretBox } from '../../src/crypto/secretBox.js';
import { resealPass } from '../../src/jobs/reseal.js';
import { lockSealedUnder } from '../../src/jobs/resealRepo.js';
import { withTransaction } from '../../src/db/transaction.js';
import { appendObservations } from '../../src/ledger/ledgerRepo.js';
import { sweepOnce } from '../../src/jobs/sweeps.js';
import { verifyChain } from '../../src/ledger/chainVerifyRepo.js';
import { insertPendingAuthorization, pkceAad } from '../../src/oauth/pendingAuthRepo.js';
import { insertConnection, secretOwnerOf } from '../../src/secrets/connectionsRepo.js';
import { aadOf, storeTokens } from '../../src/secrets/tokenVault.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { keyIdsInUse, resealEntries } from '../support/sealedKeys.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

const logger = createLogger({ level: 'silent' });
const key = (kid: string) => ({ kid, key: new Secret(randomBytes(32).toString('base64url')) });
const [k1, k2] = [key('k1'), key('k2')];
const boxOf = (...keys: ReturnType<typeof key>[]) => createSecretBox(createKeyring(keys, 'secrets'));
const always = () => true;

interface Seeded {
  navigationId: string;
  connectionId: string;
  /** Each sealed value's plaintext, by where it lives. */
  plain: { token: string; refresh: string; verifier: string; args: string; handle: string };
  stateDigest: Buffer;
  operationKey: string;
}

/** One flow with every kind of sealed value, all sealed under `box`'s active key by the functions that seal them. */
async function seedFlow(db: TestDb, box: SecretBox, sub: string): Promise<Seeded> {
  const navigation = navigationFixture('OUT_OF_BAND_PENDING', { subject: { iss: 'https://idp.test', sub } });
  const handle = `handle-canary-${randomBytes(8).toString('hex')}`;
  await insertNavigation(db.pool, navigation, undefined, box.seal(handle, handleAad(navigation.id)));
  const token = `access-canary-${randomBytes(8).toString('hex')}`;
  const refresh = `refresh-canary-${randomBytes(8).toString('hex')}`;
  const connection = await insertConnection(
    db.pool,
    {
      subject: navigation.subject,
      provider: 'reports',
      upstreamSubject: `u-${sub}`,
      upstreamName: sub,
      grantedScopes: [],
      metadata: {},
      apiBase: undefined,
      navigationId: navigation.id,
    },
    new Date(),
  );
  await storeTokens(
    db.pool,
    { box, clock: systemClock },
    secretOwnerOf(connection),
    { accessToken: token, refreshToken: refresh, expiresAt: undefined },
    navigation.id,
  );
  const stateDigest = randomBytes(32);
  const verifier = `verifier-canary-${randomBytes(8).toString('hex')}`;
  const sealed = box.seal(verifier, pkceAad(stateDigest, navigation.id));
  const now = new Date();
  await insertPendingAuthorization(db.pool, {
    stateDigest,
    navigationId: navigation.id,
    provider: 'reports',
    codeVerifierSealed: sealed.ciphertext,
    keyId: sealed.keyId,
    nonce: 'n',
    redirectUri: navigation.redirectPolicy.callback,
    browserIss: navigation.subject.iss,
    browserSub: sub,
    createdAt: now,
    expiresAt: new Date(now.getTime() + 600_000),
  });
  const operationKey = `op-${randomUUID()}`;
  const args = JSON.stringify({ title: `args-canary-${sub}` });
  await insertReceiptOnce(
    db.pool,
    {
      id: randomUUID(),
      operationKey,
      navigationId: navigation.id,
      lineage: 'mrtr',
      jsonrpcId: undefined,
      retryGeneration: undefined,
      requirementReceipt: 'r',
      createdAt: now,
    },
    box.seal(args, argumentsAad(operationKey)),
  );
  return {
    navigationId: navigation.id,
    connectionId: connection.id,
    plain: { token, refresh, verifier, args, handle },
    stateDigest,
    operationKey,
  };
}

/** Every sealed value of a seeded flow, opened with `box` (throws if one does not open). */
async function openAll(db: TestDb, box: SecretBox, seeded: Seeded, sub: string) {
  const one = async (sql: string) => (await db.pool.query<{ c: Buffer; k: string }>(sql, [seeded.navigationId])).rows;
  const owner = { connectionId: seeded.connectionId, subject: { iss: 'https://idp.test', sub }, provider: 'reports' };
  const [access] = await one(
    "SELECT ciphertext AS c, key_id AS k FROM secrets WHERE navigation_id = $1 AND kind = 'access_token'",
  );
  const [refresh] = await one(
    "SELECT ciphertext AS c, key_id AS k FROM secrets WHERE navigation_id = $1 AND kind = 'refresh_token'",
  );
  const [verifier] = await one(
    'SELECT code_verifier_sealed AS c, key_id AS k FROM oauth_transactions WHERE navigation_id = $1',
  );
  const [args] = await one(
    'SELECT arguments_sealed AS c, arguments_key_id AS k FROM operation_receipts WHERE navigation_id = $1',
  );
  const [handle] = await one(
    'SELECT handle_sealed AS c, handle_key_id AS k FROM elicitation_navigations WHERE id = $1',
  );
  const open = (row: { c: Buffer; k: string } | undefined, aad: string) =>
    box.open({ ciphertext: row!.c, keyId: row!.k }, aad);
  return {
    token: open(access, aadOf(owner, 'access_token')),
    refresh: open(refresh, aadOf(owner, 'refresh_token')),
    verifier: open(verifier, pkceAad(seeded.stateDigest, seeded.navigationId)),
    args: open(args, argumentsAad(seeded.operationKey)),
    handle: open(handle, handleAad(seeded.navigationId)),
  };
}

describe('the re-seal job', () => {
  let db: TestDb;
  beforeEach(async () => {
    db = await createTestDb();
  });
  afterEach(async () => {
    await db.drop();
  });

  it('moves every kind of sealed value to the active key with its AAD, on two instances at once, each value once, with ledger entries counting them per key id', async () => {
    const subs = ['alice', 'bob', 'carol', 'dave'];
    const seeded = await Promise.all(subs.map((sub) => seedFlow(db, boxOf(k1), sub)));
    expect(await keyIdsInUse(db.pool)).toEqual(['k1']);

    // k2 is added first: two instances re-seal at once, in batches of 3, over two pools.
    const rotated = boxOf(k2, k1);
    const passes = await Promise.all(
      [db.pool, db.newPool()].map((pool) => resealPass({ pool, box: rotated, clock: systemClock, logger }, always, 3)),
    );
    // 5 values per flow (access and refresh token, verifier, arguments, handle).
    expect(passes.reduce((n, p) => n + p.resealed, 0)).toBe(subs.length * 5);
    expect(passes.every((p) => p.unopened === 0)).toBe(true);
    expect(await keyIdsInUse(db.pool)).toEqual(['k2']);

    // k1 retired: every value opens under k2 alone, the same plaintext, in its own row's AAD.
    for (const [i, s] of seeded.entries()) expect(await openAll(db, boxOf(k2), s, subs[i]!)).toEqual(s.plain);

    const events = await resealEntries(db.pool);
    for (const s of seeded) {
      const mine = events.filter((e) => e.navigation_id === s.navigationId);
      expect(mine.every((e) => e.actor === 'system:reseal' && e.evidence.keyId === 'k2')).toBe(true);
      // Recorded in the flow's state, moving nothing.
      expect(mine.every((e) => e.from_status === 'OUT_OF_BAND_PENDING' && e.to_status === 'OUT_OF_BAND_PENDING')).toBe(
        true,
      );
      const byKind = (kind: string) =>
        mine.filter((e) => e.evidence.kind === kind).reduce((n, e) => n + (e.evidence.from['k1'] ?? 0), 0);
      expect([
        byKind('tokens'),
        byKind('pendingAuthorizations'),
        byKind('toolArguments'),
        byKind('connectLinks'),
      ]).toEqual([2, 1, 1, 1]);
    }
    const text = JSON.stringify(events);
    for (const s of seeded) for (const value of Object.values(s.plain)) expect(text).not.toContain(value);
    expect((await verifyChain(db.pool)).firstBreak).toBeUndefined();

    // Nothing left: a second pass moves nothing and writes nothing.
    expect(await resealPass({ pool: db.pool, box: rotated, clock: systemClock, logger }, always)).toEqual({
      resealed: 0,
      unopened: 0,
    });
    expect(await resealEntries(db.pool)).toHaveLength(events.length);
  });

  // The deadlock two instances met: one held a flow's connect-link row while the other, holding
  // that flow's ledger head, waited to insert the flow's entry (whose foreign key share-locks the
  // row). A re-seal changes no key, so its lock must let that entry through.
  it("locks a flow's row so that another transaction can still append to the flow's ledger", async () => {
    const seeded = await seedFlow(db, boxOf(k1), 'alice');
    const holder = await db.pool.connect();
    const other = db.newPool();
    try {
      await holder.query('BEGIN');
      const rows = await lockSealedUnder(holder, 'connectLinks', ['k1'], undefined, 10);
      expect(rows.map((r) => r.navigationId)).toEqual([seeded.navigationId]);
      await withTransaction(other, async (tx) => {
        await tx.query("SET LOCAL lock_timeout = '2s'");
        await appendObservations(tx, [
          {
            navigationId: seeded.navigationId,
            event: 'values_resealed',
            actor: 'system:reseal',
            evidence: {},
            at: new Date(),
          },
        ]);
      });
      expect((await resealEntries(db.pool)).filter((e) => e.navigation_id === seeded.navigationId)).toHaveLength(1);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('leaves a value that does not open under its configured key and moves the rest past it', async () => {
    const first = await seedFlow(db, boxOf(k1), 'alice');
    await seedFlow(db, boxOf(k1), 'bob');
    // alice's access token altered at rest: it fails authentication under k1.
    await db.pool.query(
      "UPDATE secrets SET ciphertext = overlay(ciphertext placing '\\xff'::bytea from 20 for 1) WHERE navigation_id = $1 AND kind = 'access_token'",
      [first.navigationId],
    );
    // Batches of 1: the altered row must not hold up the rows after it.
    const pass = await resealPass({ pool: db.pool, box: boxOf(k2, k1), clock: systemClock, logger }, always, 1);
    expect(pass).toEqual({ resealed: 9, unopened: 1 });
    const { rows } = await db.pool.query(
      "SELECT key_id FROM secrets WHERE navigation_id = $1 AND kind = 'access_token'",
      [first.navigationId],
    );
    expect(rows).toEqual([{ key_id: 'k1' }]);
  });

  it('runs in the sweep, as far as its budget goes, and does nothing with one key configured', async () => {
    await seedFlow(db, boxOf(k1), 'alice');
    const reseal = (box: SecretBox) => (inBudget: () => boolean) =>
      resealPass({ pool: db.pool, box, clock: systemClock, logger }, inBudget);
    const sweep = (box: SecretBox) => sweepOnce({ pool: db.pool, clock: systemClock, logger, reseal: reseal(box) });
    expect((await sweep(boxOf(k1))).resealedValues).toBe(0);
    expect(await keyIdsInUse(db.pool)).toEqual(['k1']);
    expect((await sweep(boxOf(k2, k1))).resealedValues).toBe(5);
    expect(await keyIdsInUse(db.pool)).toEqual(['k2']);
    expect((await sweep(boxOf(k2, k1))).resealedValues).toBe(0);
  });
});
