import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompletionSignal, type CompletionSignal } from '../../src/broker/completionSignal.js';
import type { Pool } from '../../src/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

/** A promise with its resolve function, to hold a waiter at a chosen step. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** An isDone() that answers `answers[i]` on its i-th call (the last one after that) and reports each call. */
function scriptedCheck(answers: (boolean | Promise<boolean>)[]) {
  const calls: ReturnType<typeof deferred>[] = [deferred(), deferred(), deferred(), deferred()];
  let n = 0;
  const check = async () => {
    calls[Math.min(n, calls.length - 1)]!.resolve(undefined);
    return answers[Math.min(n++, answers.length - 1)]!;
  };
  return { check, called: (i: number) => calls[i]!.promise, count: () => n };
}

describe('completion signal waiters on one navigation', () => {
  let db: TestDb;
  let signal: CompletionSignal;

  beforeAll(async () => {
    db = await createTestDb();
    // Through a transaction-mode pooler the listener needs a connection straight to Postgres (DATABASE_DIRECT_URL).
    signal = createCompletionSignal(db.newDirectPool() ?? db.pool, createLogger({ level: 'silent' }));
  });
  afterAll(async () => {
    await signal.close();
    await db.drop();
  });

  it('wakes a waiter that joined after the others left, while one of them was still making its last check', async () => {
    const id = randomUUID();
    const never = 600_000; // longer than the test may run: only a signal ends these waits

    // X times out soon and is held in its last isDone() check, its wake-up already withdrawn.
    const xLastCheck = deferred<boolean>();
    const x = scriptedCheck([false, xLastCheck.promise]);
    const xDone = signal.waitFor(id, 200, x.check);
    // A waits for a signal and is done when it comes.
    const a = scriptedCheck([false, true]);
    const aDone = signal.waitFor(id, never, a.check);
    await Promise.all([x.called(1), a.called(0)]);

    await signal.notify(db.pool, id);
    expect(await aDone).toBe(true);

    // B joins now, and X finishes its last check afterwards.
    const b = scriptedCheck([false, true]);
    const bDone = signal.waitFor(id, never, b.check);
    await b.called(0);
    xLastCheck.resolve(false);
    expect(await xDone).toBe(false);

    // A signal for B, then one for a sentinel on the same listening connection: notifications
    // arrive in order, so once the sentinel has been woken, B's wake-up has been dispatched too.
    const sentinelId = randomUUID();
    const sentinel = scriptedCheck([false, true]);
    const sentinelDone = signal.waitFor(sentinelId, never, sentinel.check);
    await sentinel.called(0);
    await signal.notify(db.pool, id);
    await signal.notify(db.pool, sentinelId);
    expect(await sentinelDone).toBe(true);
    expect(b.count()).toBe(2);
    expect(await bDone).toBe(true);
  });

  it('wakes a waiter whose navigation completed while the listening connection was down', async () => {
    // The listener's connection, to end it from outside as a failover or a restart would.
    let listenerPid: number | undefined;
    const pool = {
      connect: async () => {
        const client = await (db.newDirectPool() ?? db.pool).connect();
        listenerPid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        return client;
      },
    } as unknown as Pool; // the signal only calls connect()
    const own = createCompletionSignal(pool, createLogger({ level: 'silent' }));
    try {
      const id = randomUUID();
      let done = false;
      const firstCheck = deferred();
      let checks = 0;
      const waiting = own.waitFor(id, 600_000, async () => {
        checks += 1;
        if (checks === 1) firstCheck.resolve(undefined);
        // The second check comes after the connection was lost: the completion commits and signals now.
        if (checks === 2) {
          done = true;
          await own.notify(db.pool, id);
          return false;
        }
        return done;
      });
      await firstCheck.promise;
      await db.pool.query('SELECT pg_terminate_backend($1)', [listenerPid]);
      expect(await waiting).toBe(true);
    } finally {
      await own.close();
    }
  });

  it('stops cleanly when Postgres ends the listening connection while close() is releasing it', async () => {
    let listenerPid = 0;
    const pool = {
      connect: async () => {
        const client = await (db.newDirectPool() ?? db.pool).connect();
        listenerPid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        return client;
      },
    } as unknown as Pool; // the signal only calls connect()
    const warnings: unknown[] = [];
    const logger = createLogger({ level: 'silent' });
    logger.warn = ((...args: unknown[]) => void warnings.push(args)) as typeof logger.warn;
    const own = createCompletionSignal(pool, logger);
    expect(await own.waitFor(randomUUID(), 10, async () => false)).toBe(false);
    // A stopping server: close() releases the connection, and only then does the connection's error arrive
    // (Postgres shutting down). Releasing it twice threw inside the error event and ended the process.
    const closing = own.close();
    await db.pool.query('SELECT pg_terminate_backend($1)', [listenerPid]);
    await closing;
    await new Promise((r) => setTimeout(r, 200));
    expect(warnings).toEqual([]);
    // The pool is still healthy: the terminated connection was dropped, not handed out again.
    expect((await db.pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});
