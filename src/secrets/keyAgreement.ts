import { randomUUID } from 'node:crypto';
import type { KeyRotationView } from '../crypto/keyring.js';
import type { Queryable } from '../db/pool.js';
import type { Logger } from '../shared/logger.js';
import { announceKeys, liveKeySets, withdrawKeys } from './keyHoldersRepo.js';

/**
 * A key rotation in two phases, enforced here rather than by the order an operator restarts
 * instances in. Phase one: the new key is put first in SECRET_KEYS and instances restart one by one;
 * each announces the key ids it holds (key_holders), and new values stay sealed under the newest key
 * every live instance holds, so an instance still on the old key set never meets a value it cannot
 * open. Phase two starts by itself once every live instance holds the new key: new values are sealed
 * under it and the re-seal job moves the old ones (`settled`).
 */
export interface KeyAgreement extends KeyRotationView {
  /** Every live instance holds this instance's first key: values may be sealed and re-sealed under it. */
  settled(): boolean;
}

export interface KeyRegistry extends KeyAgreement {
  /** Announces this instance's key ids and reads every live instance's; a failed read keeps the last view. */
  refresh(): Promise<void>;
  /** Takes this instance out of the registry (a clean stop), so the others need not wait for it to age out. */
  leave(): Promise<void>;
}

/** The first of `own` that every live instance holds; `own[0]` when none is (key sets that share nothing). */
export function agreedActiveKid(own: readonly string[], live: readonly (readonly string[])[]): string {
  return own.find((kid) => live.every((set) => set.includes(kid))) ?? own[0]!;
}

export interface KeyRegistryOptions {
  db: Queryable;
  /** SECRET_KEYS's ids, in order. */
  own: readonly string[];
  /** How long an instance counts as live after its last announcement: a few announcement intervals. */
  liveMs: number;
  logger: Logger;
  instanceId?: string;
}

export function createKeyRegistry(options: KeyRegistryOptions): KeyRegistry {
  const { db, own, liveMs, logger } = options;
  const instanceId = options.instanceId ?? randomUUID();
  // Until the first read, only this instance is known.
  let live: string[][] = [[...own]];
  let active = own[0]!;
  let disjoint = false;
  const view = (): void => {
    const agreed = agreedActiveKid(own, live);
    if (agreed !== active) {
      logger.info({ activeKeyId: agreed, previous: active }, 'key rotation: new values are sealed under another key');
    }
    const shared = own.some((kid) => live.every((set) => set.includes(kid)));
    if (!shared && !disjoint) {
      logger.warn(
        { keyIds: own, live },
        'key rotation: no key of SECRET_KEYS is held by every live instance; each seals under its own first key',
      );
    }
    disjoint = !shared;
    active = agreed;
  };
  return {
    activeKid: () => active,
    settled: () => active === own[0],
    heldByLive: (kid) => !own.includes(kid) && live.some((set) => set.includes(kid)),
    async refresh() {
      await announceKeys(db, instanceId, own);
      const sets = await liveKeySets(db, liveMs);
      live = sets.length === 0 ? [[...own]] : sets;
      view();
    },
    async leave() {
      await withdrawKeys(db, instanceId);
    },
  };
}
