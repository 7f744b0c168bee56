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
