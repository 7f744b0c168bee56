import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { alongsideItems, type Alongside } from '../../src/db/alongside.js';
import { connectionInsertAlongside, secretOwnerOf } from '../../src/secrets/connectionsRepo.js';
import { findSecrets } from '../../src/secrets/secretsRepo.js';
import { openSecret, replaceTokensAlongside } from '../../src/secrets/sealedTokens.js';
import { systemClock } from '../../src/shared/clock.js';
import { Secret } from '../../src/shared/secret.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// A callback replaces a connection's whole token set in the statement that verifies its flow: the
// kinds the new grant carries are upserted and every other kind deleted, so a refresh token of a
// previous grant never outlives it, and no other connection's tokens are touched.
describe('replacing a connection’s token set in one statement', () => {
  let db: TestDb;
  const box = createSecretBox(
    createKeyring([{ kid: 'k1', key: new Secret(randomBytes(32).toString('base64url')) }], 'secrets'),
  );
  const deps = { box, clock: systemClock };
  const subject = { iss: 'https://idp.example.test', sub: 'alice' };

  /** Runs `writes` as one statement, as verifyAndSettle runs them beside its own. */
  const inOneStatement = async (writes: readonly Alongside[]) => {
    const items = alongsideItems(writes, 0);
    await db.pool.query(`WITH ${items.text} SELECT 1`, items.values);
  };
  const connect = async (login: string) => {
    const id = randomUUID();
    const facts = {
      subject: { ...subject, sub: login },
      provider: 'reports',
      upstreamSubject: `up-${login}`,
      upstreamName: undefined,
      grantedScopes: ['reports:write'],
      metadata: {},
      apiBase: undefined,
      navigationId: undefined,
    };
    const owner = secretOwnerOf({ id, ...facts });
    const tokens = { accessToken: `at-1-${login}`, refreshToken: `rt-1-${login}`, expiresAt: undefined };
    await inOneStatement([
      connectionInsertAlongside(id, facts, new Date()),
      ...replaceTokensAlongside(deps, owner, tokens, undefined),
    ]);
    return owner;
  };
  const tokensOf = async (connectionId: string) =>
    Object.fromEntries((await findSecrets(db.pool, connectionId)).map((s) => [s.kind, openSecret(box, s)]));

  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('a grant without a refresh token leaves none of the previous grant behind', async () => {
    const alice = await connect('alice');
    const bob = await connect('bob');
    expect(await tokensOf(alice.connectionId)).toEqual({ access_token: 'at-1-alice', refresh_token: 'rt-1-alice' });

    await inOneStatement(
      replaceTokensAlongside(
        deps,
        alice,
        { accessToken: 'at-2', refreshToken: undefined, expiresAt: undefined },
        undefined,
      ),
    );
    expect(await tokensOf(alice.connectionId)).toEqual({ access_token: 'at-2' });
    expect(await tokensOf(bob.connectionId)).toEqual({ access_token: 'at-1-bob', refresh_token: 'rt-1-bob' });
  });

  it('a grant with both kinds replaces both, each kind once', async () => {
    const carol = await connect('carol');
    const expiresAt = new Date(Date.now() + 3_600_000);
    await inOneStatement(
      replaceTokensAlongside(deps, carol, { accessToken: 'at-3', refreshToken: 'rt-3', expiresAt }, undefined),
    );
    expect(await tokensOf(carol.connectionId)).toEqual({ access_token: 'at-3', refresh_token: 'rt-3' });
    const rows = await findSecrets(db.pool, carol.connectionId);
    expect(rows.map((r) => [r.kind, r.expiresAt?.getTime()])).toEqual([
      ['access_token', expiresAt.getTime()],
      ['refresh_token', undefined],
    ]);
  });
});
