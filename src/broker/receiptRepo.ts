import type { Queryable } from '../db/pool.js';
import type { Lineage } from './navigationRecord.js';

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
}

const COLUMNS = 'id, operation_key, navigation_id, lineage, jsonrpc_id, retry_generation, requirement_receipt, outcome_status, outcome, created_at';

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
});

/** Inserts the receipt unless one exists for the key; returns the receipt that is now recorded and whether it is new. */
export async function insertReceiptOnce(db: Queryable, receipt: Omit<OperationReceipt, 'outcome' | 'outcomeStatus'>): Promise<{ receipt: OperationReceipt; created: boolean }> {
  const inserted = await db.query<Row>(
    `INSERT INTO operation_receipts (id, operation_key, navigation_id, lineage, jsonrpc_id, retry_generation, requirement_receipt, outcome_status, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8) ON CONFLICT (operation_key) DO NOTHING RETURNING ${COLUMNS}`,
    [receipt.id, receipt.operationKey, receipt.navigationId, receipt.lineage, receipt.jsonrpcId ?? null, receipt.retryGeneration ?? null, receipt.requirementReceipt, receipt.createdAt],
  );
  if (inserted.rows[0]) return { receipt: fromRow(inserted.rows[0]), created: true };
  const existing = await findReceiptByKey(db, receipt.operationKey);
  if (!existing) throw new Error('operation receipt vanished after a conflict');
  return { receipt: existing, created: false };
}

export async function findReceiptByKey(db: Queryable, operationKey: string): Promise<OperationReceipt | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM operation_receipts WHERE operation_key = $1`, [operationKey]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function findReceiptByNavigation(db: Queryable, navigationId: string): Promise<OperationReceipt | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM operation_receipts WHERE navigation_id = $1`, [navigationId]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** Records the business outcome once; a later recording for the same receipt changes nothing. */
export async function recordOutcome(db: Queryable, id: string, status: 'succeeded' | 'failed', outcome: Record<string, unknown>, resultDigest: string, now: Date): Promise<OperationReceipt | undefined> {
  const { rows } = await db.query<Row>(
    `UPDATE operation_receipts SET outcome_status = $2, outcome = $3, result_digest = $4, completed_at = $5
      WHERE id = $1 AND outcome_status = 'pending' RETURNING ${COLUMNS}`,
    [id, status, JSON.stringify(outcome), resultDigest, now],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}
