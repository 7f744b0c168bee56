import type { Sealed } from '../crypto/secretBox.js';
import { statementText, type SqlPart } from '../db/alongside.js';
import type { Queryable } from '../db/pool.js';
import type { FlowWrite } from '../ledger/ledgerRepo.js';
import { fromRow, type NavigationRecord, type NavigationRow } from '../flow/navigationRecord.js';
import { expirableStates, openStates, type NavigationState } from '../flow/navigationStates.js';

const COLUMNS = `id, record_version, server_id, subject_iss, subject_sub, client_id, request_digest, tool, target_scheme,
  target_host, redirect_policy, purpose, provider, handle_digest, state_nonce_digest, session_generation, lineage,
  retry_generation, status, row_version, created_at, expires_at, updated_at, trace_parent`;

/** A navigation row's columns as `alias.column`, for a join whose other table names its own apart. */
export const navigationColumnsOf = (alias: string): string =>
  COLUMNS.split(/,\s*/)
    .map((c) => `${alias}.${c}`)
    .join(', ');

/**
 * Inserts a new navigation; `reissuedFrom` names the flow an operator re-issued
 * it for; `handle` is its connect handle, sealed, so the same link can be
 * presented again while the flow is open.
 */
export async function insertNavigation(
  db: Queryable,
  n: NavigationRecord,
  reissuedFrom?: string,
  handle?: Sealed,
): Promise<void> {
  const { text, values } = insertNavigationWrite(n, reissuedFrom, handle);
  await db.query(text, values);
}

// The type of each value insertNavigationWrite passes, in order: an INSERT … SELECT types its
// parameters by these casts, as it does not take them from the columns.
const INSERT_TYPES = [
  'uuid',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'jsonb',
  'text',
  'text',
  'bytea',
  'bytea',
  'int',
  'text',
  'int',
  'text',
  'int',
  'timestamptz',
  'timestamptz',
  'timestamptz',
  'text',
  'uuid',
  'bytea',
  'text',
];

/**
 * insertNavigation as a statement returning the row, for a caller that writes more in the same one.
 * `when`: a condition read in the same statement; while it does not hold, nothing is inserted.
 */
export function insertNavigationWrite(
  n: NavigationRecord,
  reissuedFrom?: string,
  handle?: Sealed,
  when?: SqlPart,
): FlowWrite {
  const own = INSERT_TYPES.map((type, i) => `$${i + 1}::${type}`).join(', ');
  const rows = when
    ? `SELECT ${own} WHERE COALESCE((${when.text((i) => `$${INSERT_TYPES.length + i}`)}), false)`
    : `VALUES (${own})`;
  return {
    text: `INSERT INTO elicitation_navigations (${COLUMNS}, reissued_from, handle_sealed, handle_key_id)
     ${rows}
     RETURNING ${COLUMNS}`,
    values: [
      n.id,
      n.recordVersion,
      n.serverId,
      n.subject.iss,
      n.subject.sub,
      n.clientId ?? null,
      n.requestDigest,
      n.tool,
      n.targetScheme,
      n.targetHost,
      JSON.stringify(n.redirectPolicy),
      n.purpose,
      n.provider,
      n.handleDigest,
      n.stateNonceDigest ?? null,
      n.sessionGeneration,
      n.lineage,
      n.retryGeneration,
      n.status,
      n.rowVersion,
      n.createdAt,
      n.expiresAt,
      n.updatedAt,
      n.traceParent ?? null,
      reissuedFrom ?? null,
      handle?.ciphertext ?? null,
      handle?.keyId ?? null,
      ...(when?.values ?? []),
    ],
  };
}

export async function findNavigationById(db: Queryable, id: string): Promise<NavigationRecord | undefined> {
  const { rows } = await db.query<NavigationRow>(`SELECT ${COLUMNS} FROM elicitation_navigations WHERE id = $1`, [id]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function findNavigationByHandle(
  db: Queryable,
  handleDigest: Buffer,
): Promise<NavigationRecord | undefined> {
  const { rows } = await db.query<NavigationRow>(
    `SELECT ${COLUMNS} FROM elicitation_navigations WHERE handle_digest = $1`,
    [handleDigest],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** The navigation an operator re-issued in place of `id`, if any. */
export async function findReissueOf(db: Queryable, id: string): Promise<NavigationRecord | undefined> {
  const { rows } = await db.query<NavigationRow>(
    `SELECT ${COLUMNS} FROM elicitation_navigations WHERE reissued_from = $1`,
    [id],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** The row, locked until the transaction ends: the caller is about to decide on its status. */
export async function lockNavigation(db: Queryable, id: string): Promise<NavigationRecord | undefined> {
  // Decisions on this navigation (consent, callback, acceptance) are serialised. NO KEY UPDATE, as
  // on every navigation lock here: a ledger row's foreign key takes a key-share lock on its flow
  // while holding the chain lock (migrations/0004_ledger_chain.sql), and FOR UPDATE would make it
  // wait for a holder that waits for the chain lock in turn.
  const { rows } = await db.query<NavigationRow>(
    `SELECT ${COLUMNS} FROM elicitation_navigations WHERE id = $1 FOR NO KEY UPDATE`,
    [id],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export interface StatusChange {
  id: string;
  from: NavigationState;
  to: NavigationState;
  rowVersion: number;
  now: Date;
  stateNonceDigest?: Buffer;
}

/**
 * Compare-and-set on (id, status, row_version), as a statement returning the row it moved. Zero
 * rows means another writer moved it first, or `unless` held; the caller decides (usually
 * ConflictError). `unless`: a condition that holds the move back, in the same statement.
 */
export function compareAndSetWrite(change: StatusChange, unless?: SqlPart): FlowWrite {
  const own = [change.id, change.from, change.to, change.rowVersion, change.now, change.stateNonceDigest ?? null];
  const held = unless ? `AND NOT COALESCE((${unless.text((i) => `$${own.length + i}`)}), true)` : '';
  return {
    text: `UPDATE elicitation_navigations
        SET status = $3, row_version = row_version + 1, updated_at = $5,
            state_nonce_digest = COALESCE($6, state_nonce_digest)
      WHERE id = $1 AND status = $2 AND row_version = $4 ${held}
      RETURNING ${COLUMNS}`,
    values: [...own, ...(unless?.values ?? [])],
  };
}

/**
 * compareAndSetWrite for several navigations in one statement, each on its own (id, status,
 * row_version), returning the rows of those it moved (fewer than given means another writer moved
 * one first). `movedInOrder` puts them back in the order given.
 */
export function compareAndSetEachWrite(changes: readonly Omit<StatusChange, 'stateNonceDigest'>[]): FlowWrite {
  return {
    text: `UPDATE elicitation_navigations
        SET status = c.to_status, row_version = row_version + 1, updated_at = c.at
       FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::timestamptz[])
            AS c(change_id, from_status, to_status, seen_version, at)
      WHERE id = c.change_id AND status = c.from_status AND row_version = c.seen_version
      RETURNING ${COLUMNS}`,
    values: [
      changes.map((c) => c.id),
      changes.map((c) => c.from),
      changes.map((c) => c.to),
      changes.map((c) => c.rowVersion),
      changes.map((c) => c.now),
    ],
  };
}

/** The rows of compareAndSetEachWrite as records, in the order of `changes`. */
export function movedInOrder(changes: readonly { id: string }[], rows: readonly NavigationRow[]): NavigationRecord[] {
  const moved = new Map(rows.map((r) => [r.id, fromRow(r)]));
  return changes.map((c) => moved.get(c.id)).filter((n) => n !== undefined);
}

/** One operation of one client in one lineage: whose flows openFlowIdPart looks through. */
export interface OperationKey {
  subjectIss: string;
  subjectSub: string;
  clientId: string | undefined;
  tool: string;
  requestDigest: string;
  lineage: string;
}

/**
 * The id of the operation's open, unexpired flow (null for none), as a scalar subquery that can be
 * read beside another statement: the newest of its five latest flows that is open, unexpired, of its
 * lineage and its client.
 */
export function openFlowIdPart(op: OperationKey, now: Date): SqlPart {
  return {
    text: (p) => `SELECT r.id FROM (
        SELECT id, status, expires_at, lineage, client_id, created_at FROM elicitation_navigations
         WHERE subject_iss = ${p(1)} AND subject_sub = ${p(2)} AND tool = ${p(3)} AND request_digest = ${p(4)}
         ORDER BY created_at DESC LIMIT 5) r
      WHERE r.status = ANY(${p(5)}) AND r.expires_at > ${p(6)} AND r.lineage = ${p(7)} AND coalesce(r.client_id, '') = ${p(8)}
      ORDER BY r.created_at DESC LIMIT 1`,
    values: [
      op.subjectIss,
      op.subjectSub,
      op.tool,
      op.requestDigest,
      [...openStates],
      now,
      op.lineage,
      op.clientId ?? '',
    ],
  };
}

/** The operation's open flow (openFlowIdPart), if there is one. */
export async function findOpenFlow(db: Queryable, op: OperationKey, now: Date): Promise<NavigationRecord | undefined> {
  const part = openFlowIdPart(op, now);
  const { rows } = await db.query<NavigationRow>(
    `SELECT ${COLUMNS} FROM elicitation_navigations WHERE id = (${statementText(part)})`,
    part.values,
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** The newest navigations (up to `limit`) a subject started for one operation (tool + argument digest), in any lineage. */
export async function findLatestForOperation(
  db: Queryable,
  op: { subjectIss: string; subjectSub: string; tool: string; requestDigest: string },
  limit = 5,
): Promise<NavigationRecord[]> {
  const { rows } = await db.query<NavigationRow>(
    `SELECT ${COLUMNS} FROM elicitation_navigations
      WHERE subject_iss = $1 AND subject_sub = $2 AND tool = $3 AND request_digest = $4
      ORDER BY created_at DESC LIMIT $5`,
    [op.subjectIss, op.subjectSub, op.tool, op.requestDigest, limit],
  );
  return rows.map(fromRow);
}

/**
 * Open navigations past their expiry, locked for this transaction. SKIP LOCKED:
 * several instances sweep at once, each taking rows no other sweeper holds.
 */
export async function lockOverdueNavigations(db: Queryable, now: Date, limit: number): Promise<NavigationRecord[]> {
  const { rows } = await db.query<NavigationRow>(
    `SELECT ${COLUMNS} FROM elicitation_navigations
      WHERE status = ANY($3) AND expires_at <= $1
      ORDER BY expires_at LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED`,
    [now, limit, [...expirableStates]],
  );
  return rows.map(fromRow);
}

/**
 * The open flows of one (subject, provider), locked for this transaction, in id order so two
 * settling transactions cannot deadlock.
 */
export async function lockOpenNavigationsFor(
  db: Queryable,
  subject: { iss: string; sub: string },
  provider: string,
): Promise<NavigationRecord[]> {
  const { rows } = await db.query<NavigationRow>(
    `SELECT ${COLUMNS} FROM elicitation_navigations
      WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3 AND status = ANY($4)
      ORDER BY id FOR NO KEY UPDATE`,
    [subject.iss, subject.sub, provider, [...openStates]],
  );
  return rows.map(fromRow);
}

/** The sealed connect handle of a navigation (none for flows created before it was kept). */
export async function findSealedHandle(db: Queryable, id: string): Promise<Sealed | undefined> {
  const { rows } = await db.query<{ handle_sealed: Buffer | null; handle_key_id: string | null }>(
    'SELECT handle_sealed, handle_key_id FROM elicitation_navigations WHERE id = $1',
    [id],
  );
  const r = rows[0];
  return r?.handle_sealed && r.handle_key_id ? { ciphertext: r.handle_sealed, keyId: r.handle_key_id } : undefined;
}

/** Serialises quota decisions of one principal until the transaction ends (count, then insert). */
export async function lockPrincipalQuota(db: Queryable, subject: { iss: string; sub: string }): Promise<void> {
  // Advisory, keyed by the principal: two of its calls cannot both pass a count that only one fits in.
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 7))', [
    `navigation-quota\n${subject.iss}\n${subject.sub}`,
  ]);
}

/**
 * The principal's two quota counts, as a SELECT: the flows it started since `since` (and when the
 * oldest of them began), and its flows of `provider` open and not past their expiry at `now` (and
 * when the first of them expires). One source for countQuotaFlows and quotasAllow.
 */
function quotaCounts(subject: { iss: string; sub: string }, provider: string, since: Date, now: Date): SqlPart {
  return {
    text: (p) =>
      `SELECT count(*) FILTER (WHERE created_at > ${p(3)})::int AS recent,
              min(created_at) FILTER (WHERE created_at > ${p(3)}) AS oldest,
              count(*) FILTER (WHERE provider = ${p(4)} AND status = ANY(${p(5)}) AND expires_at > ${p(6)})::int AS open,
              min(expires_at) FILTER (WHERE provider = ${p(4)} AND status = ANY(${p(5)}) AND expires_at > ${p(6)}) AS first
         FROM elicitation_navigations
        WHERE subject_iss = ${p(1)} AND subject_sub = ${p(2)}
          AND (created_at > ${p(3)} OR (provider = ${p(4)} AND status = ANY(${p(5)}) AND expires_at > ${p(6)}))`,
    values: [subject.iss, subject.sub, since, provider, [...openStates], now],
  };
}

/** The principal's two quota counts in one statement (quotaCounts). */
export async function countQuotaFlows(
  db: Queryable,
  subject: { iss: string; sub: string },
  provider: string,
  since: Date,
  now: Date,
): Promise<{
  recent: { count: number; oldest: Date | undefined };
  open: { count: number; firstExpiry: Date | undefined };
}> {
  const counts = quotaCounts(subject, provider, since, now);
  const { rows } = await db.query<{ recent: number; oldest: Date | null; open: number; first: Date | null }>(
    statementText(counts),
    counts.values,
  );
  const r = rows[0];
  return {
    recent: { count: r?.recent ?? 0, oldest: r?.oldest ?? undefined },
    open: { count: r?.open ?? 0, firstExpiry: r?.first ?? undefined },
  };
}

/**
 * Whether the principal may start one more flow, as a condition of the statement that inserts it
 * (insertNavigationWrite's `when`): fewer than `perHour` since `since` and, unless `openPerProvider` is
 * undefined (a flow born verified is not counted as open), fewer than that many open. Read under lockPrincipalQuota, as countQuotaFlows is.
 */
export function quotasAllow(
  subject: { iss: string; sub: string },
  provider: string,
  since: Date,
  now: Date,
  limits: { perHour: number; openPerProvider: number | undefined },
): SqlPart {
  const counts = quotaCounts(subject, provider, since, now);
  const n = counts.values.length;
  return {
    text: (p) =>
      `SELECT q.recent < ${p(n + 1)}::int AND (${p(n + 2)}::int IS NULL OR q.open < ${p(n + 2)}::int) FROM (${counts.text(p)}) q`,
    values: [...counts.values, limits.perHour, limits.openPerProvider ?? null],
  };
}
