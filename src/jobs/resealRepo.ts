import type { Queryable } from '../db/pool.js';

// Every value at rest sealed with the vault's box (purpose 'secrets'), by kind: its table, the
// column that identifies its row, the sealed bytes and their key id, the flow it belongs to, and
// the row facts its AAD is built from (in the order reseal.ts's `aadOf` reads them). What the
// keys status counts and the re-seal job moves: a kind added here is covered by both.
export const sealedColumns = {
  tokens: {
    table: 'secrets',
    key: 'id',
    keyType: 'uuid',
    sealed: 'ciphertext',
    keyId: 'key_id',
    flow: 'navigation_id',
    aadParts: ['aad_layout::text', 'connection_id::text', 'subject_iss', 'subject_sub', 'provider', 'kind'],
    // Sealed before the AAD bound the connection (migrations/0019_connection_accounts.sql): moved to
    // the current layout whatever its key, as the migration could not re-seal them.
    oldAad: { where: 'aad_layout = 1', set: 'aad_layout = 2' },
  },
  pendingAuthorizations: {
    table: 'oauth_transactions',
    key: 'state_digest',
    keyType: 'bytea',
    sealed: 'code_verifier_sealed',
    keyId: 'key_id',
    flow: 'navigation_id',
    aadParts: ["encode(state_digest, 'hex')", 'navigation_id::text'],
  },
  toolArguments: {
    table: 'operation_receipts',
    key: 'id',
    keyType: 'uuid',
    sealed: 'arguments_sealed',
    keyId: 'arguments_key_id',
    flow: 'navigation_id',
    aadParts: ['operation_key'],
  },
  connectLinks: {
    table: 'elicitation_navigations',
    key: 'id',
    keyType: 'uuid',
    sealed: 'handle_sealed',
    keyId: 'handle_key_id',
    flow: 'id',
    aadParts: ['id::text'],
  },
  upstreamRegistrations: {
    table: 'upstream_registrations',
    key: 'id',
    keyType: 'uuid',
    sealed: 'client_secret_sealed',
    keyId: 'key_id',
    // A client registration belongs to no flow: its re-seal is counted, never entered in a flow's ledger.
    flow: 'NULL::uuid',
    aadParts: ['id::text'],
  },
} as const;

export type SealedKind = keyof typeof sealedColumns;
export const sealedKinds = Object.keys(sealedColumns) as SealedKind[];

/** A kind whose rows may still carry an older AAD layout: what selects them, and what a re-seal writes instead. */
const oldAadOf = (kind: SealedKind): { where: string; set: string } | undefined => {
  const c = sealedColumns[kind];
  return 'oldAad' in c ? c.oldAad : undefined;
};

/** The kinds whose rows may carry an older AAD layout: re-sealed even with a single key configured. */
export const kindsWithOldAad = sealedKinds.filter((kind) => oldAadOf(kind) !== undefined);

export interface SealedRow {
  /** The row's identity (uuid text, or the bytes of a bytea key). */
  key: string | Buffer;
  sealed: Buffer;
  keyId: string;
  navigationId: string | undefined;
  aadParts: string[];
}

/**
 * Locks up to `limit` rows of one kind sealed under one of `keyIds` (or under an older AAD layout), past `after` in key order, for
 * the caller's short transaction. SKIP LOCKED: a row another instance re-seals, or a refresh or
 * callback is rewriting, is left to a later pass rather than waited for. NO KEY UPDATE, as a
 * re-seal changes no key: FOR UPDATE would also hold off the foreign-key share lock that a ledger
 * entry of the same flow takes, and another instance holding that flow's ledger head would wait
 * on it while this one waits on the head (a deadlock).
 */
export async function lockSealedUnder(
  db: Queryable,
  kind: SealedKind,
  keyIds: readonly string[],
  after: string | Buffer | undefined,
  limit: number,
): Promise<SealedRow[]> {
  const c = sealedColumns[kind];
  const oldAad = oldAadOf(kind);
  const { rows } = await db.query<{
    key: string | Buffer;
    sealed: Buffer;
    key_id: string;
    navigation_id: string | null;
    aad_parts: string[];
  }>(
    `SELECT ${c.key} AS key, ${c.sealed} AS sealed, ${c.keyId} AS key_id, ${c.flow} AS navigation_id,
            ARRAY[${c.aadParts.join(', ')}] AS aad_parts
       FROM ${c.table}
      WHERE (${c.keyId} = ANY($1)${oldAad ? ` OR ${oldAad.where}` : ''}) AND ($2::${c.keyType} IS NULL OR ${c.key} > $2)
      ORDER BY ${c.key} LIMIT $3
        FOR NO KEY UPDATE SKIP LOCKED`,
    [keyIds, after ?? null, limit],
  );
  return rows.map((r) => ({
    key: r.key,
    sealed: r.sealed,
    keyId: r.key_id,
    navigationId: r.navigation_id ?? undefined,
    aadParts: r.aad_parts,
  }));
}

/** Writes re-sealed values over the locked rows in one statement; nothing else in the row changes but the AAD layout they are now sealed with. */
export async function writeResealed(
  db: Queryable,
  kind: SealedKind,
  rows: readonly { key: string | Buffer; sealed: Buffer; keyId: string }[],
): Promise<void> {
  if (rows.length === 0) return;
  const c = sealedColumns[kind];
  const oldAad = oldAadOf(kind);
  await db.query(
    `UPDATE ${c.table} t SET ${c.sealed} = v.sealed, ${c.keyId} = v.key_id${oldAad ? `, ${oldAad.set}` : ''}
       FROM unnest($1::${c.keyType}[], $2::bytea[], $3::text[]) AS v(key, sealed, key_id)
      WHERE t.${c.key} = v.key`,
    [rows.map((r) => r.key), rows.map((r) => r.sealed), rows.map((r) => r.keyId)],
  );
}

/** How many values of each kind each key id seals (a kind or key id with none is absent). */
export async function countSealedByKey(db: Queryable): Promise<{ kind: SealedKind; keyId: string; count: number }[]> {
  const { rows } = await db.query<{ kind: SealedKind; key_id: string; n: number }>(
    sealedKinds
      .map((kind) => {
        const c = sealedColumns[kind];
        return `SELECT '${kind}' AS kind, ${c.keyId} AS key_id, count(*)::int AS n FROM ${c.table} WHERE ${c.keyId} IS NOT NULL GROUP BY ${c.keyId}`;
      })
      .join(' UNION ALL '),
  );
  return rows.map((r) => ({ kind: r.kind, keyId: r.key_id, count: r.n }));
}
