import type { Queryable } from '../db/pool.js';

export interface WebSession {
  idDigest: Buffer;
  subject: { iss: string; sub: string } | undefined;
  displayName: string | undefined;
  /** The sign-in carried the operator role (decided once, at sign-in). */
  operator: boolean;
  expiresAt: Date;
}

interface Row {
  id_digest: Buffer;
  subject_iss: string | null;
  subject_sub: string | null;
  display_name: string | null;
  operator: boolean;
  expires_at: Date;
}

function fromRow(row: Row): WebSession {
  return {
    idDigest: row.id_digest,
    subject:
      row.subject_iss !== null && row.subject_sub !== null ? { iss: row.subject_iss, sub: row.subject_sub } : undefined,
    displayName: row.display_name ?? undefined,
    operator: row.operator,
    expiresAt: row.expires_at,
  };
}

export async function insertSession(db: Queryable, session: WebSession, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO web_sessions (id_digest, subject_iss, subject_sub, display_name, operator, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      session.idDigest,
      session.subject?.iss ?? null,
      session.subject?.sub ?? null,
      session.displayName ?? null,
      session.operator,
      now,
      session.expiresAt,
    ],
  );
}

export async function findActiveSession(db: Queryable, idDigest: Buffer, now: Date): Promise<WebSession | undefined> {
  const { rows } = await db.query<Row>(
    `SELECT id_digest, subject_iss, subject_sub, display_name, operator, expires_at
       FROM web_sessions
      WHERE id_digest = $1 AND expires_at > $2 AND revoked_at IS NULL`,
    [idDigest, now],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function deleteSession(db: Queryable, idDigest: Buffer): Promise<void> {
  await db.query('DELETE FROM web_sessions WHERE id_digest = $1', [idDigest]);
}
