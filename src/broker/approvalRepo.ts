import type { Queryable } from '../db/pool.js';

export interface Approval {
  id: string;
  navigationId: string;
  tool: string;
  provider: string;
  subject: string;
  status: 'pending' | 'approved' | 'rejected';
  reason: string | undefined;
  decidedBy: string | undefined;
  requestedAt: Date;
  decidedAt: Date | undefined;
}

interface Row {
  id: string;
  navigation_id: string;
  tool: string;
  provider: string;
  subject_sub: string;
  status: string;
  reason: string | null;
  decided_by: string | null;
  requested_at: Date;
  decided_at: Date | null;
}

const COLUMNS = 'id, navigation_id, tool, provider, subject_sub, status, reason, decided_by, requested_at, decided_at';

const fromRow = (r: Row): Approval => ({
  id: r.id,
  navigationId: r.navigation_id,
  tool: r.tool,
  provider: r.provider,
  subject: r.subject_sub,
  status: r.status as Approval['status'], // CHECK constraint
  reason: r.reason ?? undefined,
  decidedBy: r.decided_by ?? undefined,
  requestedAt: r.requested_at,
  decidedAt: r.decided_at ?? undefined,
});

/** Inserts a pending approval unless the navigation has one; returns the one recorded and whether it is new. */
export async function insertApprovalOnce(
  db: Queryable,
  a: Pick<Approval, 'id' | 'navigationId' | 'tool' | 'provider' | 'subject' | 'requestedAt'>,
): Promise<{ approval: Approval; created: boolean }> {
  const { rows } = await db.query<Row>(
    `INSERT INTO operation_approvals (id, navigation_id, tool, provider, subject_sub, status, requested_at)
     VALUES ($1, $2, $3, $4, $5, 'pending', $6) ON CONFLICT (navigation_id) DO NOTHING RETURNING ${COLUMNS}`,
    [a.id, a.navigationId, a.tool, a.provider, a.subject, a.requestedAt],
  );
  if (rows[0]) return { approval: fromRow(rows[0]), created: true };
  const existing = await findApprovalByNavigation(db, a.navigationId);
  if (!existing) throw new Error('approval vanished after a conflict');
  return { approval: existing, created: false };
}

export async function findApprovalByNavigation(db: Queryable, navigationId: string): Promise<Approval | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM operation_approvals WHERE navigation_id = $1`, [
    navigationId,
  ]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function lockApproval(db: Queryable, id: string): Promise<Approval | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM operation_approvals WHERE id = $1 FOR UPDATE`, [id]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** Decides a pending approval once; undefined when it was already decided. */
export async function decideApprovalRow(
  db: Queryable,
  id: string,
  status: 'approved' | 'rejected',
  reason: string,
  actor: string,
  now: Date,
): Promise<Approval | undefined> {
  const { rows } = await db.query<Row>(
    `UPDATE operation_approvals SET status = $2, reason = $3, decided_by = $4, decided_at = $5 WHERE id = $1 AND status = 'pending' RETURNING ${COLUMNS}`,
    [id, status, reason, actor, now],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** The queue: pending approvals first (oldest first), then the latest decisions. */
export async function findApprovals(
  db: Queryable,
  status: Approval['status'] | undefined,
  limit: number,
): Promise<Approval[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${COLUMNS} FROM operation_approvals WHERE ($1::text IS NULL OR status = $1)
      ORDER BY (status = 'pending') DESC, CASE WHEN status = 'pending' THEN requested_at END ASC, decided_at DESC LIMIT $2`,
    [status ?? null, limit],
  );
  return rows.map(fromRow);
}
