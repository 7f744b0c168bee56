import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { Queryable } from '../db/pool.js';

/** Records the consent once per navigation; a second consent (a retried redirect) keeps the first receipt. */
export async function recordConsent(
  db: Queryable,
  navigationId: string,
  browser: Principal,
  displayedDestination: string,
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO consent_receipts (id, navigation_id, browser_iss, browser_sub, displayed_destination, created_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (navigation_id) DO NOTHING`,
    [randomUUID(), navigationId, browser.iss, browser.sub, displayedDestination, now],
  );
}
