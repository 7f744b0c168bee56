import type { Queryable } from '../db/pool.js';
import { navigationColumnsOf } from '../broker/navigationRepo.js';
import { fromRow, type NavigationRecord, type NavigationRow } from '../flow/navigationRecord.js';
import { claimPendingText, pendingOfJoined, type PendingAuthorization } from '../oauth/pendingAuthRepo.js';

/**
 * A callback's first read, in one statement: the OAuth transaction of its state, consumed at most
 * once (oauth/pendingAuthRepo.ts claimPendingText), and the flow it belongs to
 * (undefined when the flow is gone).
 */
export async function claimForCallback(
  db: Queryable,
  stateDigest: Buffer,
): Promise<{ pending: PendingAuthorization; navigation: NavigationRecord | undefined } | undefined> {
  const { rows } = await db.query<NavigationRow & Record<string, unknown>>(
    `WITH claimed AS (${claimPendingText('$1')})
     SELECT claimed.*, ${navigationColumnsOf('n')}
       FROM claimed LEFT JOIN elicitation_navigations n ON n.id = claimed.pending_navigation_id`,
    [stateDigest],
  );
  const row = rows[0];
  if (!row) return undefined;
  return { pending: pendingOfJoined(row), navigation: row.id === null ? undefined : fromRow(row) };
}
