import type { Client, DiscoverResult } from '@modelcontextprotocol/client';

/** One connected SDK client, kept for the next calls of its (upstream, user's token, modes): many at once. */
export interface Kept {
  client: Client;
  /** Its key in the pool, and whose it is: the upstream and the token's digest (a 401 drops all of theirs). */
  key: string;
  owner: string;
  usedAt: number;
  /** Calls running on it: a client dropped while some run is closed when the last one ends. */
  running: number;
  dropped: boolean;
}

// Connected clients kept per (upstream, user's token; on 2026-07-28 also the elicitation modes declared),
// each ended after this long unused, the least recently used first past the bound.
const MAX_CLIENTS = 1_000;
const CLIENT_IDLE_MS = 5 * 60_000;

/**
 * The connected SDK clients kept between calls (upstreamMcpClient.ts), and each user's server/discover
 * answer, which the SDK reuses only within one authorization context (ConnectOptions.prior): so it is
 * kept per (upstream, token), not per upstream.
 */
export function createClientPool() {
  const kept = new Map<string, Kept>();
  const opening = new Map<string, Promise<Kept>>();
  const discovered = new Map<string, { discover: DiscoverResult; usedAt: number }>();

  /** Kept as the most recently used (a Map iterates in insertion order), the least recently used dropped past the bound. */
  function keep(entry: Kept): void {
    kept.delete(entry.key);
    kept.set(entry.key, entry);
    while (kept.size > MAX_CLIENTS) drop(kept.values().next().value!);
  }

  /** Not handed out again; closed once no call runs on it (closing the transport would end theirs). */
  function drop(entry: Kept): void {
    if (kept.get(entry.key) === entry) kept.delete(entry.key);
    entry.dropped = true;
    if (entry.running === 0) void entry.client.close().catch(() => undefined);
  }

  /** Ends the clients (and forgets the discover answers) unused for CLIENT_IDLE_MS, the least recently used first. */
  function sweep(): void {
    const now = Date.now();
    for (const entry of kept.values()) {
      if (now - entry.usedAt <= CLIENT_IDLE_MS) break;
      drop(entry);
    }
    for (const [owner, entry] of discovered) {
      if (now - entry.usedAt <= CLIENT_IDLE_MS) break;
      discovered.delete(owner);
    }
  }

  return {
    keep,
    drop,
    /** A newly connected client in place of any kept under its key. */
    replace(entry: Kept): void {
      const previous = kept.get(entry.key);
      if (previous) drop(previous);
      keep(entry);
    },
    /** A kept client for `key`, or a new one from `open`: one connection at a time per key. */
    acquire(key: string, open: () => Promise<Kept>): Promise<Kept> {
      sweep();
      const found = kept.get(key);
      if (found) {
        found.usedAt = Date.now();
        keep(found);
        return Promise.resolve(found);
      }
      let pending = opening.get(key);
      if (!pending) {
        pending = open().finally(() => opening.delete(key));
        opening.set(key, pending);
      }
      return pending;
    },
    /** The user's discover answer at this upstream, if one is kept. */
    discoverOf: (owner: string): DiscoverResult | undefined => discovered.get(owner)?.discover,
    /** The user's discover answer, as the most recently used. */
    remember(owner: string, discover: DiscoverResult): void {
      discovered.delete(owner);
      discovered.set(owner, { discover, usedAt: Date.now() });
      while (discovered.size > MAX_CLIENTS) discovered.delete(discovered.keys().next().value!);
    },
    /** What it said it speaks, forgotten: the next client asks again (it may have changed). */
    forgetDiscover: (owner: string): void => void discovered.delete(owner),
    /** Everything kept for this token at this upstream: it was refused. */
    forget(owner: string): void {
      discovered.delete(owner);
      for (const entry of [...kept.values()]) if (entry.owner === owner) drop(entry);
    },
  };
}

export type ClientPool = ReturnType<typeof createClientPool>;
