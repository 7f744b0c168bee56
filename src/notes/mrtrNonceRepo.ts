import type { Queryable } from '../db/pool.js';
import type { Principal } from '../auth/principal.js';

export interface NonceClaim {
  nonceDigest: Buffer;
  principal: Principal;
  purpose: string;
  outcome: string;
  expiresAt: Date;
}

/**
 * Claims a single-use nonce. Returns false when it was claimed before (by
 * this or any other instance). Call inside the transaction of the mutation it
 * guards: a concurrent claim waits on the row and then finds it taken.
 */
export async function claimNonce(db: Queryable, claim: NonceClaim): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO mrtr_nonces (nonce_digest, principal_iss, principal_sub, purpose, outcome, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (nonce_digest) DO NOTHING`,
    [claim.nonceDigest, claim.principal.iss, claim.principal.sub, claim.purpose, claim.outcome, claim.expiresAt],
  );
  return rowCount === 1;
}
