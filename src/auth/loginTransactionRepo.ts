import type { Queryable } from '../db/pool.js';

export interface LoginTransaction {
  stateDigest: Buffer;
  sessionDigest: Buffer;
  codeVerifier: string;
  nonce: string;
  returnTo: string;
  expiresAt: Date;
}

interface Row {
  state_digest: Buffer;
  session_digest: Buffer;
  code_verifier: string;
  nonce: string;
  return_to: string;
  expires_at: Date;
}

export async function insertLoginTransaction(db: Queryable, tx: LoginTransaction, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO login_transactions (state_digest, session_digest, code_verifier, nonce, return_to, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [tx.stateDigest, tx.sessionDigest, tx.codeVerifier, tx.nonce, tx.returnTo, now, tx.expiresAt],
  );
}

/**
 * Consumes the transaction for this state, but only for the browser session
 * that started it and only before it expires. A replayed or foreign callback
 * finds nothing.
 */
export async function consumeLoginTransaction(db: Queryable, stateDigest: Buffer, sessionDigest: Buffer, now: Date): Promise<LoginTransaction | undefined> {
  const { rows } = await db.query<Row>(
    `DELETE FROM login_transactions
      WHERE state_digest = $1 AND session_digest = $2 AND expires_at > $3
      RETURNING state_digest, session_digest, code_verifier, nonce, return_to, expires_at`,
    [stateDigest, sessionDigest, now],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    stateDigest: row.state_digest,
    sessionDigest: row.session_digest,
    codeVerifier: row.code_verifier,
    nonce: row.nonce,
    returnTo: row.return_to,
    expiresAt: row.expires_at,
  };
}
