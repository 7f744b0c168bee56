import type { Pool, PoolClient, Queryable } from '../db/pool.js';
import type { Logger } from '../shared/logger.js';
import { singleFlight } from '../shared/singleFlight.js';

const CHANNEL = 'navigation_verified';

export interface CompletionSignal {
  /** Queues the signal in the caller's transaction: it is delivered, to every instance, on COMMIT. */
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

/**
 * Completion across instances through Postgres LISTEN/NOTIFY: the
 * callback may land on one instance while the retry waits on
 * another. One listening connection per instance; it reconnects on failure.
 */
export function createCompletionSignal(pool: Pool, logger: Logger): CompletionSignal {
  const waiters = new Map<string, Set<() => void>>();
  // The listening connection, and its release: once only, whichever comes first of a
  // connection error and close() (Postgres ending the connection while the broker stops).
  let client: { connection: PoolClient; release(err?: Error): void } | undefined;
  let closed = false;

  const wakeAll = () => {
    for (const set of waiters.values()) for (const wake of set) wake();
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
        if (!closed) logger.warn({ err }, 'completion listener lost its connection; reconnecting');
        client = undefined;
        connect.reset();
        release(err);
        // A signal sent while nobody listens is lost: listen again, then every waiter checks once more.
        if (!closed)
          connect()
            .catch((e: unknown) =>
              logger.warn({ err: e }, 'completion listener could not reconnect; waiters re-check when they time out'),
            )
            .finally(wakeAll);
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
