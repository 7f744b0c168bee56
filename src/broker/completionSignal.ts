import type { Pool, PoolClient, Queryable } from '../db/pool.js';
import type { Logger } from '../shared/logger.js';

const CHANNEL = 'navigation_verified';

export interface CompletionSignal {
  /** Queues the signal in the caller's transaction: it is delivered, to every instance, on COMMIT. */
  notify(tx: Queryable, navigationId: string): Promise<void>;
  /**
   * Resolves true as soon as `isDone()` holds (checked once after listening,
   * so no signal is missed) or a signal for the navigation arrives and
   * `isDone()` then holds; false when `timeoutMs` passes first.
   */
  waitFor(navigationId: string, timeoutMs: number, isDone: () => Promise<boolean>): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Completion across instances through Postgres LISTEN/NOTIFY (design §7,
 * §11): the callback may land on one instance while the retry waits on
 * another. One listening connection per instance; it reconnects on failure.
 */
export function createCompletionSignal(pool: Pool, logger: Logger): CompletionSignal {
  const waiters = new Map<string, Set<() => void>>();
  let client: PoolClient | undefined;
  let closed = false;
  let connecting: Promise<void> | undefined;

  const connect = (): Promise<void> => {
    connecting ??= (async () => {
      const c = await pool.connect();
      c.on('notification', (message) => {
        if (message.channel === CHANNEL && message.payload) for (const wake of waiters.get(message.payload) ?? []) wake();
      });
      c.on('error', (err) => {
        logger.warn({ err }, 'completion listener lost its connection; reconnecting');
        client = undefined;
        connecting = undefined;
        c.release(err);
        // Waiters re-check when they time out; a fresh connection serves new ones.
        for (const set of waiters.values()) for (const wake of set) wake();
      });
      await c.query(`LISTEN ${CHANNEL}`);
      if (closed) {
        c.release();
        return;
      }
      client = c;
    })().catch((err: unknown) => {
      connecting = undefined;
      throw err;
    });
    return connecting;
  };

  return {
    async notify(tx, navigationId) {
      await tx.query('SELECT pg_notify($1, $2)', [CHANNEL, navigationId]);
    },
    async waitFor(navigationId, timeoutMs, isDone) {
      await connect();
      let wake: () => void = () => undefined;
      const set = waiters.get(navigationId) ?? new Set();
      waiters.set(navigationId, set);
      try {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const signalled = new Promise<void>((resolve) => {
            wake = resolve;
            set.add(wake);
          });
          if (await isDone()) return true;
          const remaining = deadline - Date.now();
          if (remaining <= 0 || closed) return false;
          let timer: NodeJS.Timeout | undefined;
          const timedOut = await Promise.race([signalled.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), remaining)))]);
          clearTimeout(timer);
          set.delete(wake);
          if (timedOut) return isDone();
        }
      } finally {
        set.delete(wake);
        if (set.size === 0) waiters.delete(navigationId);
      }
    },
    async close() {
      closed = true;
      for (const set of waiters.values()) for (const wake of set) wake();
      if (client) {
        await client.query(`UNLISTEN ${CHANNEL}`).catch(() => undefined);
        client.release();
        client = undefined;
      }
    },
  };
}
