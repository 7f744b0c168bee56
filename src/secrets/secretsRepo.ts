import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { statementText, type Alongside } from '../db/alongside.js';
import type { Queryable } from '../db/pool.js';

export type SecretKind = 'access_token' | 'refresh_token';

/** How a row's AAD is built (sealedTokens.ts): 1 before secrets belonged to a connection, 2 binding its connection. */
export type AadLayout = 1 | 2;

export interface StoredSecret {
  id: string;
  /** The connection the secret belongs to (migrations/0019_connection_accounts.sql). */
  connectionId: string;
  subject: Principal;
  provider: string;
  kind: SecretKind;
  ciphertext: Buffer;
  keyId: string;
  aadLayout: AadLayout;
  expiresAt: Date | undefined;
  /** The flow whose callback stored it (its ledger is where the token's life is recorded). */
  navigationId: string | undefined;
  rowVersion: number;
}

interface Row {
  id: string;
  connection_id: string;
  subject_iss: string;
  subject_sub: string;
  provider: string;
  kind: string;
  ciphertext: Buffer;
  key_id: string;
  aad_layout: number;
  expires_at: Date | null;
  navigation_id: string | null;
  row_version: number;
}

const COLUMNS =
  'id, connection_id, subject_iss, subject_sub, provider, kind, ciphertext, key_id, aad_layout, expires_at, navigation_id, row_version';
const COLUMN_NAMES = COLUMNS.split(', ');

/** A secrets row's columns in a join read beside another table's: `alias.column AS prefixcolumn` each. */
export const secretColumnsAs = (alias: string, prefix: string): string =>
  COLUMN_NAMES.map((c) => `${alias}.${c} AS ${prefix}${c}`).join(', ');

/** The secret in a joined row's `prefix`ed columns (secretColumnsAs), or undefined when the join found none. */
export function secretOfJoined(row: Record<string, unknown>, prefix: string): StoredSecret | undefined {
  if (row[`${prefix}id`] === null || row[`${prefix}id`] === undefined) return undefined;
  const own = Object.fromEntries(COLUMN_NAMES.map((c) => [c, row[`${prefix}${c}`]])) as unknown as Row;
  return fromRow(own);
}

const fromRow = (r: Row): StoredSecret => ({
  id: r.id,
  connectionId: r.connection_id,
  subject: { iss: r.subject_iss, sub: r.subject_sub },
  provider: r.provider,
  kind: r.kind as SecretKind, // CHECK constraint
  ciphertext: r.ciphertext,
  keyId: r.key_id,
  aadLayout: r.aad_layout as AadLayout, // CHECK constraint
  expiresAt: r.expires_at ?? undefined,
  navigationId: r.navigation_id ?? undefined,
  rowVersion: r.row_version,
});

export type SecretWrite = Omit<StoredSecret, 'id' | 'rowVersion' | 'aadLayout'>;

/**
 * Inserts or replaces the secrets of (connection, kind), sealed under the current AAD layout, in one
 * statement (at most one of each kind per connection).
 */
export async function upsertSecrets(db: Queryable, secrets: readonly SecretWrite[], now: Date): Promise<void> {
  if (secrets.length === 0) return;
  const write = secretsUpsertAlongside(secrets, now);
  await db.query(statementText(write), write.values);
}

/** upsertSecrets as a write beside another statement's (the connection they belong to may be written there). */
export function secretsUpsertAlongside(secrets: readonly SecretWrite[], now: Date): Alongside {
  const values: unknown[] = [now];
  const rows = secrets.map((s) => {
    const n = values.length;
    values.push(
      randomUUID(),
      s.connectionId,
      s.subject.iss,
      s.subject.sub,
      s.provider,
      s.kind,
      s.ciphertext,
      s.keyId,
      s.expiresAt ?? null,
      s.navigationId ?? null,
    );
    return (p: (i: number) => string) => {
      const q = (i: number) => p(n + i);
      return `(${q(1)}::uuid, ${q(2)}::uuid, ${q(3)}, ${q(4)}, ${q(5)}, ${q(6)}, ${q(7)}::bytea, ${q(8)}, 2, ${q(9)}::timestamptz, ${q(10)}::uuid, ${p(1)}::timestamptz, ${p(1)}::timestamptz)`;
    };
  });
  return {
    text: (p) =>
      `INSERT INTO secrets (id, connection_id, subject_iss, subject_sub, provider, kind, ciphertext, key_id, aad_layout, expires_at, navigation_id, created_at, updated_at)
       VALUES ${rows.map((row) => row(p)).join(', ')}
       ON CONFLICT (connection_id, kind) DO UPDATE
          SET ciphertext = EXCLUDED.ciphertext, key_id = EXCLUDED.key_id, aad_layout = EXCLUDED.aad_layout,
              expires_at = EXCLUDED.expires_at,
              navigation_id = COALESCE(EXCLUDED.navigation_id, secrets.navigation_id),
              row_version = secrets.row_version + 1, updated_at = EXCLUDED.updated_at`,
    values,
  };
}

/** A connection's secrets; with `lock`, held until the transaction ends (a 401's forget, a callback's replace). */
export async function findSecrets(db: Queryable, connectionId: string, lock = false): Promise<StoredSecret[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${COLUMNS} FROM secrets WHERE connection_id = $1 ORDER BY kind${lock ? ' FOR UPDATE' : ''}`,
    [connectionId],
  );
  return rows.map(fromRow);
}

/**
 * Deletes a connection's secrets of the kinds not in `kept`, as a write beside the statement that
 * upserts the kept ones: the two touch different rows, so one statement replaces a token set.
 */
export const secretsDeleteOtherKindsAlongside = (connectionId: string, kept: readonly SecretKind[]): Alongside => ({
  text: (p) => `DELETE FROM secrets WHERE connection_id = ${p(1)}::uuid AND kind <> ALL(${p(2)}::text[])`,
  values: [connectionId, kept],
});

export async function deleteSecrets(db: Queryable, connectionId: string): Promise<void> {
  await db.query('DELETE FROM secrets WHERE connection_id = $1', [connectionId]);
}
