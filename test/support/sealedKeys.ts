import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../src/db/pool.js';

/** A new SECRET_KEYS entry (32 random bytes, base64url), as a brokerStack's restartWithKeys takes it. */
export const newKey = (kid: string) => ({ kid, key: randomBytes(32).toString('base64url') });

/** SECRET_KEYS's text for these keys, the first active. */
export const secretKeysEnv = (keys: readonly { kid: string; key: string }[]) =>
  keys.map((k) => `${k.kid}:${k.key}`).join(',');

/** Every key id some value at rest is sealed under, in any of the tables that hold sealed values. */
export async function keyIdsInUse(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ k: string }>(
    `SELECT key_id AS k FROM secrets UNION SELECT key_id FROM oauth_transactions
     UNION SELECT arguments_key_id FROM operation_receipts WHERE arguments_key_id IS NOT NULL
     UNION SELECT handle_key_id FROM elicitation_navigations WHERE handle_key_id IS NOT NULL ORDER BY 1`,
  );
  return rows.map((r) => r.k);
}

/** The `values_resealed` ledger entries, in the order they were written. */
export async function resealEntries(db: Queryable) {
  const { rows } = await db.query<{
    navigation_id: string;
    from_status: string;
    to_status: string;
    actor: string;
    evidence: { kind: string; keyId: string; from: Record<string, number> };
  }>(
    "SELECT navigation_id, from_status, to_status, actor, evidence FROM navigation_events WHERE event = 'values_resealed' ORDER BY id",
  );
  return rows;
}
