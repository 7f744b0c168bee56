import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyRegistry } from '../../src/secrets/keyAgreement.js';
import { createLogger } from '../../src/shared/logger.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

const logger = createLogger({ level: 'silent' });

describe('the key registry: instances announce the key ids they hold', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });
  const registry = (instanceId: string, own: string[], liveMs = 60_000) =>
    createKeyRegistry({ db: db.pool, own, liveMs, logger, instanceId });

  it('an instance with a new first key seals under the old one until every live instance holds the new one', async () => {
    const old = registry('old', ['k1']);
    const rolled = registry('rolled', ['k2', 'k1']);
    await old.refresh();
    await rolled.refresh();
    expect([rolled.activeKid(), rolled.settled()]).toEqual(['k1', false]);
    expect(old.heldByLive('k2')).toBe(false); // its view is as of its last read
    await old.refresh();
    expect(old.heldByLive('k2')).toBe(true);
    expect(old.heldByLive('k7')).toBe(false);

    // The old instance stops (its row goes with it); the rolled one reads the registry again.
    await old.leave();
    await rolled.refresh();
    expect([rolled.activeKid(), rolled.settled()]).toEqual(['k2', true]);
    await rolled.leave();
  });

  it('an instance that stopped announcing ages out', async () => {
    await db.pool.query('DELETE FROM key_holders');
    const killed = registry('killed', ['k1'], 1_000);
    const rolled = registry('rolled', ['k2', 'k1'], 1_000);
    await killed.refresh();
    await rolled.refresh();
    expect(rolled.activeKid()).toBe('k1');
    await db.pool.query("UPDATE key_holders SET seen_at = now() - interval '5 seconds' WHERE instance_id = 'killed'");
    await rolled.refresh();
    expect(rolled.activeKid()).toBe('k2');
    // Long gone (ten times the live window): its row is deleted on the way.
    await db.pool.query("UPDATE key_holders SET seen_at = now() - interval '1 minute' WHERE instance_id = 'killed'");
    await rolled.refresh();
    expect((await db.pool.query('SELECT instance_id FROM key_holders ORDER BY 1')).rows).toEqual([
      { instance_id: 'rolled' },
    ]);
  });
});
