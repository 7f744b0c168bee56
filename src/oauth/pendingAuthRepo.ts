import type { Queryable } from '../db/pool.js';
import type { Alongside } from '../db/alongside.js';

export interface PendingAuthorization {
  stateDigest: Buffer;
  navigationId: string;
  provider: string;
  codeVerifierSealed: Buffer;
  keyId: string;
  nonce: string;
  redirectUri: string;
  browserIss: string;
  browserSub: string;
  createdAt: Date;
  expiresAt: Date;
  /** The scopes the authorization request asked for; undefined on a transaction written before they were kept. */
  requestedScopes?: readonly string[] | undefined;
}

interface Row {
  state_digest: Buffer;
  navigation_id: string;
  provider: string;
  code_verifier_sealed: Buffer;
  key_id: string;
  nonce: string;
  redirect_uri: string;
  browser_iss: string;
  browser_sub: string;
  created_at: Date;
  expires_at: Date;
  requested_scopes: string[] | null;
}

const fromRow = (r: Row): PendingAuthorization => ({
  stateDigest: r.state_digest,
  navigationId: r.navigation_id,
  provider: r.provider,
  codeVerifierSealed: r.code_verifier_sealed,
  keyId: r.key_id,
  nonce: r.nonce,
  redirectUri: r.redirect_uri,
  browserIss: r.browser_iss,
  browserSub: r.browser_sub,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  requestedScopes: r.requested_scopes ?? undefined,
});

const INSERT =
  'INSERT INTO oauth_transactions (state_digest, navigation_id, provider, code_verifier_sealed, key_id, nonce, redirect_uri, browser_iss, browser_sub, created_at, expires_at, requested_scopes)';
const RETURNED =
  'state_digest, navigation_id, provider, code_verifier_sealed, key_id, nonce, redirect_uri, browser_iss, browser_sub, created_at, expires_at, requested_scopes';

const valuesOf = (p: PendingAuthorization): unknown[] => [
  p.stateDigest,
  p.navigationId,
  p.provider,
  p.codeVerifierSealed,
  p.keyId,
  p.nonce,
  p.redirectUri,
  p.browserIss,
  p.browserSub,
  p.createdAt,
  p.expiresAt,
  p.requestedScopes ? [...p.requestedScopes] : null,
];

/** The AAD of a transaction's sealed PKCE verifier: its state's digest and its flow, so it opens in no other row. */
export const pkceAad = (stateDigest: Buffer, navigationId: string): string =>
  `pkce\n${stateDigest.toString('hex')}\n${navigationId}`;

export async function insertPendingAuthorization(db: Queryable, p: PendingAuthorization): Promise<void> {
  const { text, values } = pendingAuthorizationInsert(p);
  await db.query(text, values);
}

/** insertPendingAuthorization as a statement, for a caller that writes more in the same one. */
export function pendingAuthorizationInsert(p: PendingAuthorization): { text: string; values: unknown[] } {
  return { text: `${INSERT} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, values: valuesOf(p) };
}

/** The INSERT beside a consent's move of its flow (ledgerRepo.ts writeWithEntries): written only if the flow moved. */
export function pendingAuthorizationAlongside(p: PendingAuthorization): Alongside {
  return {
    text: (n) =>
      `${INSERT} SELECT ${n(1)}::bytea, ${n(2)}::uuid, ${n(3)}, ${n(4)}::bytea, ${n(5)}, ${n(6)}, ${n(7)}, ${n(8)}, ${n(9)},
              ${n(10)}::timestamptz, ${n(11)}::timestamptz, ${n(12)}::text[]
        WHERE EXISTS (SELECT 1 FROM written)`,
    values: valuesOf(p),
  };
}

/**
 * Consumes the transaction for a state, at most once (DELETE … RETURNING): a replayed or forged
 * callback finds nothing. Expired rows are consumed too, and the caller refuses them. As an item of
 * a caller's WITH, its columns named `pending_<column>` so that a join beside it can name another
 * table's as they are (connect/callbackRepo.ts).
 */
export const claimPendingText = (stateParam: string): string =>
  `DELETE FROM oauth_transactions WHERE state_digest = ${stateParam}
   RETURNING ${RETURNED.split(', ')
     .map((c) => `${c} AS pending_${c}`)
     .join(', ')}`;

/** The transaction in a row of claimPendingText's `pending_` columns. */
export const pendingOfJoined = (row: Record<string, unknown>): PendingAuthorization =>
  fromRow(Object.fromEntries(RETURNED.split(', ').map((c) => [c, row[`pending_${c}`]])) as unknown as Row);
