import type { SecretBox } from '../crypto/secretBox.js';
import type { Queryable } from '../db/pool.js';
import { appendObservations } from '../ledger/ledgerRepo.js';
import type { Clock } from '../shared/clock.js';
import { deleteSecrets, type StoredSecret } from './secretsRepo.js';

/** Whether a stored secret was sealed under a key id SECRET_KEYS no longer holds: nothing here can open it. */
export const keyMissing = (box: SecretBox, s: StoredSecret): boolean => !box.keyIds().includes(s.keyId);

/**
 * In the caller's transaction, over the connection's secrets as it read them (accessTokenFor holds
 * them locked): when one of them can no longer be opened (its key was retired before the re-seal
 * job moved it, or lost), the connection is forgotten as a refused refresh forgets it, so the user
 * is asked to connect again rather than meeting an internal error on every call.
 * `connection_key_missing` is recorded on the flow whose callback stored them, with the key id and
 * never a value. Returns whether it forgot them.
 */
export async function forgetUnopenable(
  tx: Queryable,
  deps: { box: SecretBox; clock: Clock },
  secrets: readonly StoredSecret[],
): Promise<boolean> {
  const unopenable = secrets.find((s) => keyMissing(deps.box, s));
  if (!unopenable) return false;
  const { provider } = unopenable;
  await deleteSecrets(tx, unopenable.connectionId);
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
