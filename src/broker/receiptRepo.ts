import { createHash } from 'node:crypto';
import type { Queryable } from '../db/pool.js';
import type { Sealed } from '../crypto/secretBox.js';
import type { Lineage } from '../flow/navigationStates.js';
import type { Alongside } from '../db/alongside.js';

export interface OperationReceipt {
  id: string;
  operationKey: string;
  navigationId: string;
  lineage: Lineage;
  jsonrpcId: string | undefined;
  retryGeneration: number | undefined;
  requirementReceipt: string;
  outcomeStatus: 'pending' | 'succeeded' | 'failed';
  outcome: Record<string, unknown> | undefined;
  createdAt: Date;
  /** While someone performs the operation: until when their lease holds. */
  performLeaseUntil: Date | undefined;
  /** When a call was sent and its answer lost: only an operator's re-drive may send it again. */
  outcomeUnknownAt: Date | undefined;
  /** While the provider's question waits for the host's answer (nothing done), until when it may come. */
  awaitingInputUntil: Date | undefined;
}

interface Row {
  id: string;
  operation_key: string;
  navigation_id: string;
  lineage: string;
  jsonrpc_id: string | null;
  retry_generation: number | null;
  requirement_receipt: string;
  outcome_status: string;
  outcome: Record<string, unknown> | null;
  created_at: Date;
  perform_lease_until: Date | null;
  outcome_unknown_at: Date | null;
  awaiting_input_until: Date | null;
}

const COLUMNS =
  'id, operation_key, navigation_id, lineage, jsonrpc_id, retry_generation, requirement_receipt, outcome_status, outcome, created_at, perform_lease_until, outcome_unknown_at, awaiting_input_until';

const fromRow = (r: Row): OperationReceipt => ({
  id: r.id,
  operationKey: r.operation_key,
  navigationId: r.navigation_id,
  lineage: r.lineage as Lineage, // CHECK constraint
  jsonrpcId: r.jsonrpc_id ?? undefined,
  retryGeneration: r.retry_generation ?? undefined,
  requirementReceipt: r.requirement_receipt,
  outcomeStatus: r.outcome_status as OperationReceipt['outcomeStatus'], // CHECK constraint
  outcome: r.outcome ?? undefined,
  createdAt: r.created_at,
  performLeaseUntil: r.perform_lease_until ?? undefined,
  outcomeUnknownAt: r.outcome_unknown_at ?? undefined,
  awaitingInputUntil: r.awaiting_input_until ?? undefined,
});

/** A receipt as its acceptance writes it: pending, nobody performing it yet. */
export type NewReceipt = Omit<
  OperationReceipt,
  'outcome' | 'outcomeStatus' | 'performLeaseUntil' | 'outcomeUnknownAt' | 'awaitingInputUntil'
>;

const RECEIPT_INSERT =
  'INSERT INTO operation_receipts (id, operation_key, navigation_id, lineage, jsonrpc_id, retry_generation, requirement_receipt, outcome_status, created_at, arguments_sealed, arguments_key_id)';

const receiptValues = (receipt: NewReceipt, sealedArguments?: Sealed): unknown[] => [
  receipt.id,
  receipt.operationKey,
  receipt.navigationId,
  receipt.lineage,
  receipt.jsonrpcId ?? null,
  receipt.retryGeneration ?? null,
  receipt.requirementReceipt,
  receipt.createdAt,
  sealedArguments?.ciphertext ?? null,
  sealedArguments?.keyId ?? null,
];

/**
 * Inserts the receipt unless one exists for the key; returns the receipt that is now recorded and
 * whether it is new. `sealedArguments` keeps the operation's arguments for a re-drive (redrive.ts).
 */
export async function insertReceiptOnce(
  db: Queryable,
  receipt: NewReceipt,
  sealedArguments?: Sealed,
): Promise<{ receipt: OperationReceipt; created: boolean }> {
  const inserted = await db.query<Row>(
    `${RECEIPT_INSERT}
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10) ON CONFLICT (operation_key) DO NOTHING RETURNING ${COLUMNS}`,
    receiptValues(receipt, sealedArguments),
  );
  if (inserted.rows[0]) return { receipt: fromRow(inserted.rows[0]), created: true };
  const existing = await findReceiptByKey(db, receipt.operationKey);
  if (!existing) throw new Error('operation receipt vanished after a conflict');
  return { receipt: existing, created: false };
}

/**
 * The receipt's INSERT beside its flow's move (ledgerRepo.ts writeWithEntries), written only when
 * the move moved the flow. No ON CONFLICT: a receipt already under the key fails the whole
 * statement (unique_violation), the move with it, so a flow never moves without its own receipt.
 */
export function receiptInsertAlongside(receipt: NewReceipt, sealedArguments?: Sealed): Alongside {
  return {
    text: (p) =>
      `${RECEIPT_INSERT}
       SELECT ${p(1)}::uuid, ${p(2)}, ${p(3)}::uuid, ${p(4)}, ${p(5)}, ${p(6)}::int, ${p(7)}, 'pending', ${p(8)}::timestamptz, ${p(9)}::bytea, ${p(10)}
        WHERE EXISTS (SELECT 1 FROM written)`,
    values: receiptValues(receipt, sealedArguments),
  };
}

/** The row receiptInsertAlongside wrote, as findReceiptById would read it. */
export const insertedReceipt = (receipt: NewReceipt): OperationReceipt => ({
  ...receipt,
  outcomeStatus: 'pending',
  outcome: undefined,
  performLeaseUntil: undefined,
  outcomeUnknownAt: undefined,
  awaitingInputUntil: undefined,
});

export async function findReceiptByKey(db: Queryable, operationKey: string): Promise<OperationReceipt | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM operation_receipts WHERE operation_key = $1`, [
    operationKey,
  ]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function findReceiptByNavigation(
  db: Queryable,
  navigationId: string,
): Promise<OperationReceipt | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM operation_receipts WHERE navigation_id = $1`, [
    navigationId,
  ]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** The digest kept beside a recorded outcome (result_digest): SHA-256 of its JSON. */
export const resultDigestOf = (outcome: Record<string, unknown>): string =>
  createHash('sha256').update(JSON.stringify(outcome)).digest('hex');

/** Records the business outcome once (and ends any perform lease); a later recording for the same receipt changes nothing. */
export async function recordOutcome(
  db: Queryable,
  id: string,
  status: 'succeeded' | 'failed',
  outcome: Record<string, unknown>,
  resultDigest: string,
  now: Date,
): Promise<OperationReceipt | undefined> {
  const { rows } = await db.query<Row>(
    `UPDATE operation_receipts SET outcome_status = $2, outcome = $3, result_digest = $4, completed_at = $5,
            perform_lease_owner = NULL, perform_lease_until = NULL
      WHERE id = $1 AND outcome_status = 'pending' RETURNING ${COLUMNS}`,
    [id, status, JSON.stringify(outcome), resultDigest, now],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/**
 * Takes the perform lease of a pending receipt for `owner` until `until`, if no
 * one holds an unexpired one: at most one caller performs an accepted
 * operation at a time. The row's own compare-and-set decides; no lock is held
 * while the caller talks to the provider.
 */
export async function takePerformLease(
  db: Queryable,
  id: string,
  owner: string,
  now: Date,
  until: Date,
  /** Whether one whose outcome is unknown may be performed again (an operator's re-drive). */
  unknownToo = false,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE operation_receipts SET perform_lease_owner = $2, perform_lease_until = $4, awaiting_input_until = NULL
      WHERE id = $1 AND outcome_status = 'pending' AND (perform_lease_until IS NULL OR perform_lease_until <= $3)
        AND (outcome_unknown_at IS NULL OR $5)`,
    [id, owner, now, until, unknownToo],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Records that `owner`'s call was sent and its answer lost, and gives the lease back: no retry
 * sends it again, and the reconcile sweep takes it up at once (an operator decides).
 */
export async function markOutcomeUnknown(db: Queryable, id: string, owner: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE operation_receipts SET outcome_unknown_at = $3, redrive_after = $3, perform_lease_owner = NULL, perform_lease_until = NULL
      WHERE id = $1 AND perform_lease_owner = $2 AND outcome_status = 'pending'`,
    [id, owner, now],
  );
}

/** Lengthens `owner`'s perform lease to `until` (the performer waits on the host's answer first). */
export async function extendPerformLease(db: Queryable, id: string, owner: string, until: Date): Promise<void> {
  await db.query(
    `UPDATE operation_receipts SET perform_lease_until = GREATEST(perform_lease_until, $3)
      WHERE id = $1 AND perform_lease_owner = $2 AND outcome_status = 'pending'`,
    [id, owner, until],
  );
}

/**
 * The provider did nothing and asked the host for more: `owner`'s lease is given back, the receipt
 * stays pending with no outcome, and the re-drive sweep leaves it alone until `until` (when the
 * host's answer can no longer come), so the host's answer resumes this same operation. Unanswered by
 * then, the sweep records it as such (recordUnansweredInput).
 */
export async function awaitHostInput(db: Queryable, id: string, owner: string, until: Date): Promise<void> {
  await db.query(
    `UPDATE operation_receipts SET perform_lease_owner = NULL, perform_lease_until = NULL, redrive_after = $3,
            awaiting_input_until = $3
      WHERE id = $1 AND perform_lease_owner = $2 AND outcome_status = 'pending'`,
    [id, owner, until],
  );
}

/**
 * Records `outcome` (failed) for a receipt whose provider's question was never answered: still
 * awaiting input past its time and not being performed (a perform's lease clears the mark). False
 * when it no longer is (answered meanwhile, or recorded).
 */
export async function recordUnansweredInput(
  db: Queryable,
  id: string,
  outcome: Record<string, unknown>,
  resultDigest: string,
  now: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE operation_receipts SET outcome_status = 'failed', outcome = $2, result_digest = $3, completed_at = $4,
            awaiting_input_until = NULL
      WHERE id = $1 AND outcome_status = 'pending' AND awaiting_input_until <= $4
        AND (perform_lease_until IS NULL OR perform_lease_until <= $4)`,
    [id, JSON.stringify(outcome), resultDigest, now],
  );
  return (rowCount ?? 0) > 0;
}

/** Gives a perform lease back early (the call failed before an outcome): the next caller need not wait for it to expire. */
export async function releasePerformLease(db: Queryable, id: string, owner: string): Promise<void> {
  await db.query(
    'UPDATE operation_receipts SET perform_lease_owner = NULL, perform_lease_until = NULL WHERE id = $1 AND perform_lease_owner = $2',
    [id, owner],
  );
}

export async function findReceiptById(db: Queryable, id: string): Promise<OperationReceipt | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM operation_receipts WHERE id = $1`, [id]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** The sealed arguments of an accepted operation, if they were kept. */
export async function findSealedArguments(db: Queryable, id: string): Promise<Sealed | undefined> {
  const { rows } = await db.query<{ arguments_sealed: Buffer | null; arguments_key_id: string | null }>(
    'SELECT arguments_sealed, arguments_key_id FROM operation_receipts WHERE id = $1',
    [id],
  );
  const r = rows[0];
  return r?.arguments_sealed && r.arguments_key_id
    ? { ciphertext: r.arguments_sealed, keyId: r.arguments_key_id }
    : undefined;
}

/** Makes a pending receipt due for re-drive now (an operator asked); false when it has an outcome. */
/** Takes a pending receipt out of the automatic re-drive until an operator asks for it (markRedriveDue). */
export async function holdRedrive(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE operation_receipts SET redrive_after = 'infinity' WHERE id = $1 AND outcome_status = 'pending'`,
    [id],
  );
}

export async function markRedriveDue(db: Queryable, id: string, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE operation_receipts SET redrive_after = $2 WHERE id = $1 AND outcome_status = 'pending'`,
    [id, now],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Leases pending receipts that are due for a re-drive: asked for by an
 * operator, or older than `olderThan` and not leased. SKIP LOCKED plus the
 * lease keep instances from re-driving the same receipt at once (the
 * idempotency key would make a second call harmless anyway).
 */
export async function leaseDueReceipts(
  db: Queryable,
  now: Date,
  olderThan: Date,
  leaseUntil: Date,
  limit: number,
): Promise<OperationReceipt[]> {
  const { rows } = await db.query<Row>(
    `UPDATE operation_receipts SET redrive_after = $3
      WHERE id IN (SELECT id FROM operation_receipts
                    WHERE outcome_status = 'pending' AND arguments_sealed IS NOT NULL
                      AND (redrive_after <= $1 OR (redrive_after IS NULL AND created_at <= $2))
                    ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED)
      RETURNING ${COLUMNS}`,
    [now, olderThan, leaseUntil, limit],
  );
  return rows.map(fromRow);
}
