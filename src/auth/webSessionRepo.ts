import type { Queryable } from '../db/pool.js';

export interface WebSession {
  idDigest: Buffer;
  subject: { iss: string; sub: string } | undefined;
  displayName: string | undefined;
  /** The sign-in carried the operator role (as of `createdAt`: a session is never re-checked, only replaced). */
  operator: boolean;
  /** When the session was signed in: when its operator flag was read from the identity provider. */
  createdAt: Date;
  /** When the user last authenticated at the identity provider, on the broker's clock; undefined when it did not say. */
  authenticatedAt: Date | undefined;
  lastSeenAt: Date;
  expiresAt: Date;
}

/** What operators see of a session (`broker sessions list`, /ops/sessions): no cookie, no digest. */
export interface SessionListing {
  /** `sess_<32 hex>`: unrelated to the cookie, so it can be shown and typed. */
  id: string;
  subject: string;
  displayName: string | undefined;
  operator: boolean;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

export const SESSION_ID_PATTERN = /^sess_[0-9a-f]{32}$/;

interface Row {
  id_digest: Buffer;
  subject_iss: string | null;
  subject_sub: string | null;
  display_name: string | null;
  operator: boolean;
  created_at: Date;
  authenticated_at: Date | null;
  last_seen_at: Date;
  expires_at: Date;
}

function fromRow(row: Row): WebSession {
  return {
    idDigest: row.id_digest,
    subject:
      row.subject_iss !== null && row.subject_sub !== null ? { iss: row.subject_iss, sub: row.subject_sub } : undefined,
    displayName: row.display_name ?? undefined,
    operator: row.operator,
    createdAt: row.created_at,
    authenticatedAt: row.authenticated_at ?? undefined,
    lastSeenAt: row.last_seen_at,
    expiresAt: row.expires_at,
  };
}

export async function insertSession(
  db: Queryable,
  session: Omit<WebSession, 'createdAt' | 'lastSeenAt'>,
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO web_sessions
       (id_digest, subject_iss, subject_sub, display_name, operator, authenticated_at, created_at, last_seen_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8)`,
    [
      session.idDigest,
      session.subject?.iss ?? null,
      session.subject?.sub ?? null,
      session.displayName ?? null,
      session.operator,
      session.authenticatedAt ?? null,
      now,
      session.expiresAt,
    ],
  );
}

/** The session for this digest unless it has expired or was revoked. */
export async function findActiveSession(db: Queryable, idDigest: Buffer, now: Date): Promise<WebSession | undefined> {
  const { rows } = await db.query<Row>(
    `SELECT id_digest, subject_iss, subject_sub, display_name, operator, created_at, authenticated_at, last_seen_at, expires_at
       FROM web_sessions
      WHERE id_digest = $1 AND expires_at > $2 AND revoked_at IS NULL`,
    [idDigest, now],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** Records a use of the session; the caller keeps it to one write per session a minute. */
export async function touchSession(db: Queryable, idDigest: Buffer, now: Date): Promise<void> {
  await db.query('UPDATE web_sessions SET last_seen_at = $2 WHERE id_digest = $1 AND last_seen_at < $2', [
    idDigest,
    now,
  ]);
}

export async function deleteSession(db: Queryable, idDigest: Buffer): Promise<void> {
  await db.query('DELETE FROM web_sessions WHERE id_digest = $1', [idDigest]);
}

interface ListingRow {
  public_id: string;
  subject_sub: string;
  display_name: string | null;
  operator: boolean;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
}

const listingOf = (row: ListingRow): SessionListing => ({
  id: row.public_id,
  subject: row.subject_sub,
  displayName: row.display_name ?? undefined,
  operator: row.operator,
  createdAt: row.created_at,
  lastSeenAt: row.last_seen_at,
  expiresAt: row.expires_at,
});

const LISTING_COLUMNS = 'public_id, subject_sub, display_name, operator, created_at, last_seen_at, expires_at';

/** Live sessions (signed in, unexpired, not revoked), the most recently used first; of one subject when given. */
export async function findLiveSessions(
  db: Queryable,
  filter: { subject?: string; limit: number },
  now: Date,
): Promise<SessionListing[]> {
  const { rows } = await db.query<ListingRow>(
    `SELECT ${LISTING_COLUMNS}
       FROM web_sessions
      WHERE subject_sub IS NOT NULL AND expires_at > $1 AND revoked_at IS NULL
        AND ($2::text IS NULL OR subject_sub = $2)
      ORDER BY last_seen_at DESC, public_id
      LIMIT $3`,
    [now, filter.subject ?? null, filter.limit],
  );
  return rows.map(listingOf);
}

/**
 * Marks live sessions revoked: the one with this public id, or every one of this subject (any
 * issuer: the broker signs in with one). The next request with such a cookie finds no session
 * (findActiveSession). Returns what was revoked.
 */
export async function revokeLiveSessions(
  db: Queryable,
  target: { sessionId: string } | { subject: string },
  now: Date,
): Promise<SessionListing[]> {
  const [column, value] = 'sessionId' in target ? ['public_id', target.sessionId] : ['subject_sub', target.subject];
  const { rows } = await db.query<ListingRow>(
    `UPDATE web_sessions SET revoked_at = $1
      WHERE ${column} = $2 AND subject_sub IS NOT NULL AND expires_at > $1 AND revoked_at IS NULL
      RETURNING ${LISTING_COLUMNS}`,
    [now, value],
  );
  return rows.map(listingOf).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
