import type { Queryable } from '../db/pool.js';

export interface SweptRows {
  oauthTransactions: number;
  loginTransactions: number;
  nonces: number;
  sessions: number;
}

/**
 * Deletes rows that can no longer be used: expired OAuth and login
 * transactions, single-use nonces whose states have expired (a state past
 * its expiry cannot be opened, so its nonce guards nothing), ended sessions.
 * Bounded per table; returns how many went.
 */
export async function deleteExpiredRows(db: Queryable, now: Date, limit: number): Promise<SweptRows> {
  const sweep = async (table: string, key: string) => {
    const { rowCount } = await db.query(`DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE expires_at <= $1 LIMIT $2)`, [now, limit]);
    return rowCount ?? 0;
  };
  return {
    oauthTransactions: await sweep('oauth_transactions', 'state_digest'),
    loginTransactions: await sweep('login_transactions', 'state_digest'),
    nonces: await sweep('mrtr_nonces', 'nonce_digest'),
    sessions: await sweep('web_sessions', 'id_digest'),
  };
}
