import type { Pool, PoolClient, Queryable } from '../db/pool.js';
import type { Logger } from '../shared/logger.js';
import { singleFlight } from '../shared/singleFlight.js';

// Also the channel of the triggers that send the signal when a flow is verified or its operation's
// receipt changes (migrations/0023_wake_waiters.sql); notify() is for the other changes waited on.
const CHANNEL = 'navigation_verified';

export interface CompletionSignal {
  /** Queues the navigation's signal in the caller's transaction: it is delivered, to every instance, on COMMIT. */
  notify(tx: Queryable, navigationId: string): Promise<void>;
  /**
   * Resolves true as soon as `isDone()` holds (checked once after listening,
   * so no signal is missed) or a signal for the navigation arrives and
   * `isDone()` then holds; false when `timeoutMs` passes first, or `abort` aborts.
   */
  waitFor(
    navigationId: string,
    timeoutMs: number,
    isDone: () => Promise<boolean>,
    abort?: AbortSignal,
  ): Promise<boolean>;
  close(): Promise<void>;
}

// After a lost connection: at once (one connection dropped), then doubling to every 5 s while
// the database stays away, so that it is listened to again soon after it is back.
const RELISTEN_FIRST_MS = 100;
const RELISTEN_MAX_MS = 5_000;

/**
 * Completion across instances through Postgres LISTEN/NOTIFY: the
 * callback may land on one instance while the retry waits on
 * another. One listening connection per instance; when it is lost (an
 * outage, a restart of Postgres) the instance listens again by itself, and
 * its waiters, which keep waiting meanwhile, then check once more.
 */
export function createCompletionSignal(pool: Pool, logger: Logger): CompletionSignal {
  const waiters = new Map<string, Set<() => void>>();
  // The listening connection, and its release: once only, whichever comes first of a
  // connection error and close() (Postgres ending the connection while the broker stops).
  let client: { connection: PoolClient; release(err?: Error): void } | undefined;
  let closed = false;
  let relistening = false;
  let backoff: { timer: NodeJS.Timeout; done(): void } | undefined;

  const wakeAll = () => {
    for (const set of waiters.values()) for (const wake of set) wake();
  };
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      backoff = { timer: setTimeout(resolve, ms), done: resolve };
      backoff.timer.unref();
    }).finally(() => (backoff = undefined));

  // One loop at a time, until listening again or closed. A signal sent while nobody listened is
  // lost, so every waiter then checks the database once more.
  const relisten = async () => {
    if (relistening) return;
    relistening = true;
    try {
      let delay = RELISTEN_FIRST_MS;
      for (let attempt = 1; !closed; attempt++) {
        try {
          await connect();
          if (closed) return;
          logger.info({ attempts: attempt }, 'completion listener listening again');
          wakeAll();
          return;
        } catch (err) {
          if (attempt === 1)
            logger.warn({ err }, 'completion listener cannot reach the database; trying again until it can');
          await pause(delay);
          delay = Math.min(delay * 2, RELISTEN_MAX_MS);
        }
      }
    } finally {
      relistening = false;
    }
  };

  const connect = singleFlight(
    async () => {
      const c = await pool.connect();
      const onNotification = (message: { channel: string; payload?: string | undefined }) => {
        if (message.channel === CHANNEL && message.payload)
          for (const wake of waiters.get(message.payload) ?? []) wake();
      };
      const onError = (err: Error) => {
        // Once released (close() got there first, or an earlier error), the connection is not ours.
        if (released) return;
        if (!closed) logger.warn({ err }, 'completion listener lost its connection; listening again');
        client = undefined;
        connect.reset();
        release(err);
        if (!closed) void relisten();
      };
      let released = false;
      // Back in the pool the connection is the pool's. The error listener stays (a socket may
      // still report an error, and an 'error' without a listener would end the process) but does nothing.
      const release = (err?: Error) => {
        if (released) return;
        released = true;
        c.off('notification', onNotification);
        c.release(err);
      };
      c.on('notification', onNotification);
      c.on('error', onError);
      await c.query(`LISTEN ${CHANNEL}`);
      if (closed) {
        release();
        return;
      }
      client = { connection: c, release };
    },
    { keepResult: true },
  );

  return {
    async notify(tx, navigationId) {
      await tx.query('SELECT pg_notify($1, $2)', [CHANNEL, navigationId]);
    },
    async waitFor(navigationId, timeoutMs, isDone, abort) {
      // Ended before it began (the session closed meanwhile): nothing to listen for, nothing to ask.
      if (abort?.aborted) return false;
      await connect();
      // One registration for the whole wait: the waiter stays in the set from here to `finally`, and
      // a signal that lands while it is checking is kept in `woken` for the next round.
      let woken = false;
      let release = (): void => undefined;
      const wake = () => {
        woken = true;
        release();
      };
      abort?.addEventListener('abort', wake);
      const set = waiters.get(navigationId) ?? new Set();
      waiters.set(navigationId, set);
      set.add(wake);
      let timer: NodeJS.Timeout | undefined;
      try {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          woken = false;
          if (await isDone()) return true;
          const remaining = deadline - Date.now();
          if (remaining <= 0 || closed || abort?.aborted) return false;
          if (woken) continue;
          const timedOut = await new Promise<boolean>((resolve) => {
            release = () => resolve(false);
            timer = setTimeout(() => resolve(true), remaining);
          });
          clearTimeout(timer);
          if (timedOut) return await isDone();
        }
      } finally {
        clearTimeout(timer);
        abort?.removeEventListener('abort', wake);
        set.delete(wake);
        // Only the last waiter of the navigation's current set removes it: another one may already
        // wait in a newer set under the same id.
        if (set.size === 0 && waiters.get(navigationId) === set) waiters.delete(navigationId);
      }
    },
    async close() {
      closed = true;
      if (backoff) {
        clearTimeout(backoff.timer);
        backoff.done();
      }
      wakeAll();
      const listening = client;
      client = undefined;
      if (listening) {
        await listening.connection.query(`UNLISTEN ${CHANNEL}`).catch(() => undefined);
        listening.release();
      }
    },
  };
}
