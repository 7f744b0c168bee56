import { randomBytes, randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox, SecretBoxError } from '../../src/crypto/secretBox.js';
import { migrate, migrationsDir } from '../../src/db/migrate.js';
import { resealPass } from '../../src/jobs/reseal.js';
import { insertConnection, secretOwnerOf } from '../../src/secrets/connectionsRepo.js';
import { findSecrets } from '../../src/secrets/secretsRepo.js';
import { accessTokenForConnection, openSecret, storeTokens } from '../../src/secrets/tokenVault.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// migrations/0019_connection_accounts.sql on rows written with the layout before it: one connection
// per (subject, provider), secrets keyed by (subject, provider, kind) and sealed with the AAD
// `iss\nsub\nprovider\nkind`. They must still open after it, and the re-seal moves them to the AAD
// that binds their connection, after which a ciphertext moved to another connection does not open.

const ISS = 'https://idp.test';
const logger = createLogger({ level: 'silent' });
const box = createSecretBox(
  createKeyring([{ kid: 'k1', key: new Secret(randomBytes(32).toString('base64url')) }], 'secrets'),
);
const vault = (db: TestDb) => ({ pool: db.pool, box, clock: systemClock, providers: new Map() });

/** The migrations before 0019, in a directory of their own. */
async function migrationsBefore(id: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'broker-migrations-before-'));
  await cp(migrationsDir, dir, { recursive: true });
  for (const name of await readdir(dir)) if (Number(name.slice(0, 4)) >= id) await rm(join(dir, name));
  return dir;
}

/** A connection and its two tokens as the broker wrote them before 0019. */
async function seedOldLayout(db: TestDb, sub: string) {
  const connectionId = randomUUID();
  const now = new Date();
  await db.pool.query(
    `INSERT INTO connections (id, subject_iss, subject_sub, provider, upstream_subject, connected_at, updated_at)
     VALUES ($1, $2, $3, 'reports', $4, $5, $5)`,
    [connectionId, ISS, sub, `rs-user-${sub}`, now],
  );
  const plain = { access_token: `access-canary-${sub}`, refresh_token: `refresh-canary-${sub}` };
  for (const [kind, value] of Object.entries(plain)) {
    const sealed = box.seal(value, `${ISS}\n${sub}\nreports\n${kind}`);
    await db.pool.query(
      `INSERT INTO secrets (id, subject_iss, subject_sub, provider, kind, ciphertext, key_id, created_at, updated_at)
       VALUES ($1, $2, $3, 'reports', $4, $5, $6, $7, $7)`,
      [randomUUID(), ISS, sub, kind, sealed.ciphertext, sealed.keyId, now],
    );
  }
  return { connectionId, plain };
}

describe('the several-accounts migration on rows of the old layout', () => {
  let db: TestDb;
  let before: string;
  beforeEach(async () => {
    db = await createTestDb({ migrate: false });
    before = await migrationsBefore(19);
    await migrate(db.pool, before);
  });
  afterEach(async () => {
    await db.drop();
    await rm(before, { recursive: true, force: true });
  });

  it('keys old secrets by their connection, keeps them opening, and the re-seal binds them to it', async () => {
    const alice = await seedOldLayout(db, 'alice');
    const bob = await seedOldLayout(db, 'bob');
    await migrate(db.pool);

    const { rows } = await db.pool.query(
      'SELECT subject_sub, kind, connection_id, aad_layout FROM secrets ORDER BY subject_sub, kind',
    );
    expect(rows).toEqual([
      { subject_sub: 'alice', kind: 'access_token', connection_id: alice.connectionId, aad_layout: 1 },
      { subject_sub: 'alice', kind: 'refresh_token', connection_id: alice.connectionId, aad_layout: 1 },
      { subject_sub: 'bob', kind: 'access_token', connection_id: bob.connectionId, aad_layout: 1 },
      { subject_sub: 'bob', kind: 'refresh_token', connection_id: bob.connectionId, aad_layout: 1 },
    ]);
    expect((await db.pool.query('SELECT preferred FROM connections')).rows).toEqual([
      { preferred: true },
      { preferred: true },
    ]);
    // Still usable as they are: the vault opens them under the layout they were sealed with.
    expect(await accessTokenForConnection(vault(db), alice.connectionId)).toBe(alice.plain.access_token);

    // One key configured: the re-seal moves only what is left under the old layout, once.
    const pass = () => resealPass({ pool: db.pool, box, clock: systemClock, logger }, () => true, 3);
    expect(await pass()).toEqual({ resealed: 4, unopened: 0 });
    expect(await pass()).toEqual({ resealed: 0, unopened: 0 });
    expect((await db.pool.query('SELECT DISTINCT aad_layout FROM secrets')).rows).toEqual([{ aad_layout: 2 }]);
    for (const { connectionId, plain } of [alice, bob]) {
      const opened = (await findSecrets(db.pool, connectionId)).map((s) => openSecret(box, s));
      expect(opened).toEqual([plain.access_token, plain.refresh_token]);
    }

    // alice adds a second account; her first account's ciphertext copied into it does not open there.
    const second = await insertConnection(
      db.pool,
      {
        subject: { iss: ISS, sub: 'alice' },
        provider: 'reports',
        upstreamSubject: 'rs-user-second',
        upstreamName: undefined,
        grantedScopes: [],
        metadata: {},
        apiBase: undefined,
        navigationId: undefined,
      },
      new Date(),
    );
    expect(second.preferred).toBe(false);
    await storeTokens(
      db.pool,
      { box, clock: systemClock },
      secretOwnerOf(second),
      { accessToken: 'second-canary', refreshToken: undefined, expiresAt: undefined },
      undefined,
    );
    await db.pool.query(
      `UPDATE secrets t SET ciphertext = s.ciphertext, key_id = s.key_id
         FROM secrets s WHERE s.connection_id = $1 AND s.kind = 'access_token'
          AND t.connection_id = $2 AND t.kind = 'access_token'`,
      [alice.connectionId, second.id],
    );
    const [moved] = await findSecrets(db.pool, second.id);
    expect(() => openSecret(box, moved!)).toThrow(SecretBoxError);
  });

  it('keeps one connection per (subject, provider) for a provider whose accounts cannot be known, and one default', async () => {
    await migrate(db.pool);
    const write = {
      subject: { iss: ISS, sub: 'carol' },
      provider: 'notes-upstream',
      upstreamSubject: undefined,
      upstreamName: undefined,
      grantedScopes: [],
      metadata: {},
      apiBase: undefined,
      navigationId: undefined,
    };
    const first = await insertConnection(db.pool, write, new Date());
    expect(first.preferred).toBe(true);
    // NULLS NOT DISTINCT: no second connection with no account.
    await expect(insertConnection(db.pool, write, new Date())).rejects.toThrow(/connections_account_key/);
    // Nor two defaults for one subject and provider, whatever writes them.
    const other = await insertConnection(db.pool, { ...write, upstreamSubject: 'known' }, new Date());
    expect(other.preferred).toBe(false);
    await expect(db.pool.query('UPDATE connections SET preferred = true WHERE id = $1', [other.id])).rejects.toThrow(
      /connections_one_preferred/,
    );
  });
});
