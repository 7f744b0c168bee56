import type { SecretBox } from '../crypto/secretBox.js';
import type { Queryable } from '../db/pool.js';
import { appendObservations } from '../ledger/ledgerRepo.js';
import type { Clock } from '../shared/clock.js';
import type { StoredSecret } from './secretsRepo.js';

/** Whether a stored secret was sealed under a key id SECRET_KEYS no longer holds: nothing here can open it. */
export const keyMissing = (box: SecretBox, s: StoredSecret): boolean => !box.keyIds().includes(s.keyId);

/**
 * In the caller's transaction, over the connection's secrets as it read them: when one of them can
 * no longer be opened by any live instance (its key was retired before the re-seal job moved it, or
 * lost), `connection_key_missing` is recorded on the flow whose callback stored them, with the key id
 * and never a value, and the caller moves the connection to `needs_reauth` so its user is asked to
 * connect again rather than meeting an internal error on every call. The values are kept: the new
 * grant replaces them (sealedTokens.ts), and until then `broker keys status` names their key as
 * missing. Returns whether one was unopenable.
 */
export async function recordUnopenable(
  tx: Queryable,
  deps: { box: SecretBox; clock: Clock },
  secrets: readonly StoredSecret[],
): Promise<boolean> {
  const unopenable = secrets.find((s) => keyMissing(deps.box, s));
  if (!unopenable) return false;
  const { provider } = unopenable;
  const navigationId = (secrets.find((s) => s.kind === 'access_token') ?? unopenable).navigationId;
  if (navigationId !== undefined)
    await appendObservations(tx, [
      {
        navigationId,
        event: 'connection_key_missing',
        actor: 'system:vault',
        evidence: { provider, keyId: unopenable.keyId, reason: 'sealed under a key SECRET_KEYS no longer holds' },
        at: deps.clock.now(),
      },
    ]);
  return true;
}
