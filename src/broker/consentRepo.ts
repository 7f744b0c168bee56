import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { Queryable } from '../db/pool.js';

export interface ConsentReceipt {
  id: string;
  navigationId: string;
  browser: Principal;
  displayedDestination: string;
  createdAt: Date;
}

/** Records the consent once per navigation; a second consent (a retried redirect) keeps the first receipt. */
export async function recordConsent(db: Queryable, navigationId: string, browser: Principal, displayedDestination: string, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO consent_receipts (id, navigation_id, browser_iss, browser_sub, displayed_destination, created_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (navigation_id) DO NOTHING`,
    [randomUUID(), navigationId, browser.iss, browser.sub, displayedDestination, now],
  );
}

export async function findConsent(db: Queryable, navigationId: string): Promise<ConsentReceipt | undefined> {
  const { rows } = await db.query<{ id: string; navigation_id: string; browser_iss: string; browser_sub: string; displayed_destination: string; created_at: Date }>(
    'SELECT id, navigation_id, browser_iss, browser_sub, displayed_destination, created_at FROM consent_receipts WHERE navigation_id = $1',
    [navigationId],
  );
  const r = rows[0];
  return r ? { id: r.id, navigationId: r.navigation_id, browser: { iss: r.browser_iss, sub: r.browser_sub }, displayedDestination: r.displayed_destination, createdAt: r.created_at } : undefined;
}
