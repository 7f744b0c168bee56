import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pauseConnections, resumeConnections } from '../../src/ledger/killSwitch.js';
import {
  lockSwitchExclusive,
  readSwitchHoldingPause,
  setSwitch,
  switchEngaged,
  URL_ELICITATION_PAUSED,
} from '../../src/ledger/operatorRepo.js';
import type { PoolClient } from '../../src/db/pool.js';
import { advanceUnlessMoved } from '../../src/broker/advance.js';
import { findNavigationById, insertNavigation } from '../../src/broker/navigationRepo.js';
import { State } from '../../src/flow/navigationStates.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// A consent reads the switch FOR SHARE and writes its OAuth transaction before COMMIT
// (src/connect/connectFlow.ts), in the statement that moves its flow or, when that moved nothing,
// in a transaction; these are the two orders in which a pause can meet each.
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
    await resumeConnections(db.pool, 'over', 'cli:ops', new Date());
  });

  /** A consent's move of a fresh flow, held back by the switch (connectFlow.ts), on `db`. */
  const consentMove = async (on: PoolClient | TestDb['pool']) => {
    const flow = navigationFixture(State.USER_REVIEW);
    await insertNavigation(db.pool, flow);
    const moved = await advanceUnlessMoved(
      on,
      flow,
      'browser_consent',
      { actor: 'browser:alice', now: new Date() },
      { unless: switchEngaged(URL_ELICITATION_PAUSED) },
    );
    return { flow, moved };
  };

  it('holds a consent statement back while the switch is engaged, and moves it when it is not', async () => {
    const released = await consentMove(db.pool);
    expect(released.moved?.status).toBe(State.NAVIGATION_ACCEPTED);
    await pauseConnections(db.pool, 'incident', 'cli:ops', new Date());
    const paused = await consentMove(db.pool);
    expect(paused.moved).toBeUndefined();
    expect((await findNavigationById(db.pool, paused.flow.id))?.status).toBe(State.USER_REVIEW);
    await resumeConnections(db.pool, 'over', 'cli:ops', new Date());
  });

  it('makes a pause wait for a consent statement, and a consent statement meeting a pause read it paused', async () => {
    const consent = await begin();
    expect((await consentMove(consent)).moved).toBeDefined();
    const pause = pauseConnections(db.pool, 'incident', 'cli:ops', new Date());
    expect(await stillWaiting(pause)).toBe(true);
    await end(consent);
    await pause;
    await resumeConnections(db.pool, 'over', 'cli:ops', new Date());

    const pausing = await begin();
    await lockSwitchExclusive(pausing, URL_ELICITATION_PAUSED);
    await setSwitch(pausing, URL_ELICITATION_PAUSED, true, 'incident', 'cli:ops', new Date());
    const flow = navigationFixture(State.USER_REVIEW);
    await insertNavigation(db.pool, flow);
    const meeting = advanceUnlessMoved(
      db.pool,
      flow,
      'browser_consent',
      { actor: 'browser:alice', now: new Date() },
      { unless: switchEngaged(URL_ELICITATION_PAUSED) },
    );
    expect(await stillWaiting(meeting)).toBe(true);
    await end(pausing);
    await expect(meeting).resolves.toBeUndefined();
    expect((await findNavigationById(db.pool, flow.id))?.status).toBe(State.USER_REVIEW);
    await resumeConnections(db.pool, 'over', 'cli:ops', new Date());
  });
});
