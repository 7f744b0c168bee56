import type { Queryable } from '../db/pool.js';

// The SQL of `upstream_registrations` (migrations/0017_upstream_registrations.sql): the broker's
// Dynamic Client Registrations at upstream authorization servers, the secret sealed.

export type RegisteredAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

export interface StoredRegistration {
  id: string;
  issuer: string;
  upstream: string;
  redirectUri: string;
  clientId: string;
  /** The client secret sealed under `keyId` (AAD: registrationAad(id)); absent for a public client. */
  sealedSecret: { ciphertext: Buffer; keyId: string } | undefined;
  authMethod: RegisteredAuthMethod;
  secretExpiresAt: Date | undefined;
  registeredAt: Date;
}

/** The AAD binding a sealed client secret to its row. */
export const registrationAad = (id: string): string => `upstream_registration\n${id}`;

interface Row {
  id: string;
  issuer: string;
  upstream: string;
  redirect_uri: string;
  client_id: string;
  client_secret_sealed: Buffer | null;
  key_id: string | null;
  token_endpoint_auth_method: RegisteredAuthMethod;
  client_secret_expires_at: Date | null;
  registered_at: Date;
}

const fromRow = (r: Row): StoredRegistration => ({
  id: r.id,
  issuer: r.issuer,
  upstream: r.upstream,
  redirectUri: r.redirect_uri,
  clientId: r.client_id,
  sealedSecret:
    r.client_secret_sealed && r.key_id ? { ciphertext: r.client_secret_sealed, keyId: r.key_id } : undefined,
  authMethod: r.token_endpoint_auth_method,
  secretExpiresAt: r.client_secret_expires_at ?? undefined,
  registeredAt: r.registered_at,
});

export async function findRegistration(
  db: Queryable,
  key: { issuer: string; upstream: string; redirectUri: string },
): Promise<StoredRegistration | undefined> {
  const { rows } = await db.query<Row>(
    'SELECT * FROM upstream_registrations WHERE issuer = $1 AND upstream = $2 AND redirect_uri = $3',
    [key.issuer, key.upstream, key.redirectUri],
  );
  return rows[0] && fromRow(rows[0]);
}

/**
 * Keeps a new registration unless another instance kept one for the same key first (then nothing
 * is written: the caller reads the one kept). `replaces`: the id of a stored one that can no longer
 * be used (expired, or sealed under a key that is gone), deleted in the same statement's transaction.
 */
export async function keepRegistration(db: Queryable, r: StoredRegistration, replaces?: string): Promise<void> {
  if (replaces !== undefined) await db.query('DELETE FROM upstream_registrations WHERE id = $1', [replaces]);
  await db.query(
    `INSERT INTO upstream_registrations (id, issuer, upstream, redirect_uri, client_id, client_secret_sealed, key_id,
                                         token_endpoint_auth_method, client_secret_expires_at, registered_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (issuer, upstream, redirect_uri) DO NOTHING`,
    [
      r.id,
      r.issuer,
      r.upstream,
      r.redirectUri,
      r.clientId,
      r.sealedSecret?.ciphertext ?? null,
      r.sealedSecret?.keyId ?? null,
      r.authMethod,
      r.secretExpiresAt ?? null,
      r.registeredAt,
    ],
  );
}
