import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pauseConnections, resumeConnections } from '../../src/ledger/killSwitch.js';
import {
  lockSwitchExclusive,
  readSwitchHoldingPause,
  setSwitch,
  URL_ELICITATION_PAUSED,
} from '../../src/ledger/operatorRepo.js';
import type { PoolClient } from '../../src/db/pool.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// A consent reads the switch FOR SHARE and writes its OAuth transaction before COMMIT
// (src/connect/connectFlow.ts); these are the two orders in which a pause can meet it.
describe("the kill switch's row lock", () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  const begin = async (): Promise<PoolClient> => {
    const client = await db.pool.connect();
    await client.query('BEGIN');
    return client;
  };
  const end = async (client: PoolClient) => {
    await client.query('COMMIT');
    client.release();
  };
  /** Whether `promise` is still unsettled after `ms`. */
  const stillWaiting = async (promise: Promise<unknown>, ms = 300) =>
    Promise.race([promise.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), ms))]);

  it('makes a pause wait for a consent that read the switch before it', async () => {
    const consent = await begin();
    expect(await readSwitchHoldingPause(consent, URL_ELICITATION_PAUSED)).toMatchObject({ engaged: false });
    const pause = pauseConnections(db.pool, 'incident', 'cli:ops', new Date());
    expect(await stillWaiting(pause)).toBe(true);
    await end(consent);
    await expect(pause).resolves.toMatchObject({ revokedTransactions: 0 });
    await resumeConnections(db.pool, 'over', 'cli:ops', new Date());
  });

  it('makes a consent that reads the switch during a pause wait, then read it paused', async () => {
    const pause = await begin();
    await lockSwitchExclusive(pause, URL_ELICITATION_PAUSED);
    await setSwitch(pause, URL_ELICITATION_PAUSED, true, 'incident', 'cli:ops', new Date());
    const consent = await begin();
    const read = readSwitchHoldingPause(consent, URL_ELICITATION_PAUSED);
    expect(await stillWaiting(read)).toBe(true);
    await end(pause);
    await expect(read).resolves.toEqual({ engaged: true, reason: 'incident' });
    await end(consent);
  });
});
