import { alongsideItems, type Alongside } from '../db/alongside.js';
import type { Queryable } from '../db/pool.js';

/**
 * Names the connection an accepted operation is performed through on its receipt
 * (migrations/0019_connection_accounts.sql), before the business call: with several accounts at a
 * provider, the receipt says which one acted. A re-drive performs it through the same connection.
 */
export async function recordReceiptConnection(
  db: Queryable,
  receiptId: string,
  connectionId: string,
  /** Written in the same statement: the connection's own note of this use (connectionsRepo.ts touchConnectionAlongside). */
  alongside: readonly Alongside[] = [],
): Promise<void> {
  const also = alongsideItems(alongside, 2);
  await db.query(
    `${also.text && `WITH ${also.text} `}UPDATE operation_receipts SET connection_id = $2 WHERE id = $1 AND connection_id IS DISTINCT FROM $2`,
    [receiptId, connectionId, ...also.values],
  );
}

/** The connection a receipt's operation was performed through, when one was recorded. */
export async function findReceiptConnection(db: Queryable, receiptId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ connection_id: string | null }>(
    'SELECT connection_id FROM operation_receipts WHERE id = $1',
    [receiptId],
  );
  return rows[0]?.connection_id ?? undefined;
}
