import type { Principal } from '../auth/principal.js';
import { RateLimitedError } from '../errors/appError.js';

export interface WaitGate {
  /** Runs `wait` as one of the principal's waits, or refuses (429-style, with a retry hint) when it has too many. */
  run<T>(principal: Principal, wait: () => Promise<T>): Promise<T>;
  /** Waits in progress, for tests and metrics. */
  inFlight(principal: Principal): number;
}

const keyOf = (p: Principal) => `${p.iss}\n${p.sub}`;

export function createWaitGate(limit: number): WaitGate {
  const counts = new Map<string, number>();
  return {
    async run(principal, wait) {
      const key = keyOf(principal);
      const current = counts.get(key) ?? 0;
      if (current >= limit) {
        throw new RateLimitedError(
          `You already have ${limit} calls waiting (for a connection, an approval or another call's outcome). Retry this one in a few seconds; nothing was done.`,
          5,
        );
      }
      counts.set(key, current + 1);
      try {
        return await wait();
      } finally {
        const left = (counts.get(key) ?? 1) - 1;
        if (left > 0) counts.set(key, left);
        else counts.delete(key);
      }
    },
    inFlight: (principal) => counts.get(keyOf(principal)) ?? 0,
  };
}
