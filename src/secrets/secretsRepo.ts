import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { Queryable } from '../db/pool.js';

export type SecretKind = 'access_token' | 'refresh_token';

export interface StoredSecret {
  id: string;
  subject: Principal;
  provider: string;
  kind: SecretKind;
  ciphertext: Buffer;
  keyId: string;
  expiresAt: Date | undefined;
  /** The flow whose callback stored it (its ledger is where the token's life is recorded). */
  navigationId: string | undefined;
  rowVersion: number;
}

interface Row {
  id: string;
  subject_iss: string;
  subject_sub: string;
  provider: string;
  kind: string;
  ciphertext: Buffer;
  key_id: string;
  expires_at: Date | null;
  navigation_id: string | null;
  row_version: number;
}

const COLUMNS =
  'id, subject_iss, subject_sub, provider, kind, ciphertext, key_id, expires_at, navigation_id, row_version';
const fromRow = (r: Row): StoredSecret => ({
  id: r.id,
  subject: { iss: r.subject_iss, sub: r.subject_sub },
  provider: r.provider,
  kind: r.kind as SecretKind, // CHECK constraint
  ciphertext: r.ciphertext,
  keyId: r.key_id,
  expiresAt: r.expires_at ?? undefined,
  navigationId: r.navigation_id ?? undefined,
  rowVersion: r.row_version,
});

export type SecretWrite = Omit<StoredSecret, 'id' | 'rowVersion'>;

/** Inserts or replaces the secret of (subject, provider, kind). */
export async function upsertSecret(db: Queryable, s: SecretWrite, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO secrets (id, subject_iss, subject_sub, provider, kind, ciphertext, key_id, expires_at, navigation_id, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
     ON CONFLICT (subject_iss, subject_sub, provider, kind) DO UPDATE
        SET ciphertext = EXCLUDED.ciphertext, key_id = EXCLUDED.key_id, expires_at = EXCLUDED.expires_at,
            navigation_id = COALESCE(EXCLUDED.navigation_id, secrets.navigation_id),
            row_version = secrets.row_version + 1, updated_at = EXCLUDED.updated_at`,
    [
      randomUUID(),
      s.subject.iss,
      s.subject.sub,
      s.provider,
      s.kind,
      s.ciphertext,
      s.keyId,
      s.expiresAt ?? null,
      s.navigationId ?? null,
      now,
    ],
  );
}

/** The subject's secrets for a provider; with `lock`, held until the transaction ends (refresh single-flight). */
export async function findSecrets(
  db: Queryable,
  subject: Principal,
  provider: string,
  lock = false,
): Promise<StoredSecret[]> {
  // FOR UPDATE when refreshing: a second refresher waits, then sees the fresh token.
  const { rows } = await db.query<Row>(
    `SELECT ${COLUMNS} FROM secrets WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3 ORDER BY kind${lock ? ' FOR UPDATE' : ''}`,
    [subject.iss, subject.sub, provider],
  );
  return rows.map(fromRow);
}

export async function deleteSecrets(db: Queryable, subject: Principal, provider: string): Promise<void> {
  await db.query('DELETE FROM secrets WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3', [
    subject.iss,
    subject.sub,
    provider,
  ]);
}
