import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { Queryable } from '../db/pool.js';
import type { Alongside } from '../db/alongside.js';

/**
 * Records the consent once per navigation; a second consent (a retried redirect) keeps the first
 * receipt. `alongside`, another INSERT of the consent's transaction (its OAuth transaction), runs
 * in the same statement.
 */
export async function recordConsent(
  db: Queryable,
  navigationId: string,
  browser: Principal,
  displayedDestination: string,
  now: Date,
  alongside: { text: string; values: unknown[] },
): Promise<void> {
  const at = (i: number) => `$${alongside.values.length + i}`;
  await db.query(
    `WITH consent AS (
       INSERT INTO consent_receipts (id, navigation_id, browser_iss, browser_sub, displayed_destination, created_at)
       VALUES (${at(1)}, ${at(2)}, ${at(3)}, ${at(4)}, ${at(5)}, ${at(6)}) ON CONFLICT (navigation_id) DO NOTHING)
     ${alongside.text}`,
    [...alongside.values, randomUUID(), navigationId, browser.iss, browser.sub, displayedDestination, now],
  );
}

/** recordConsent beside the consent's move of its flow (ledgerRepo.ts writeWithEntries): written only if the flow moved. */
export function consentAlongside(
  navigationId: string,
  browser: Principal,
  displayedDestination: string,
  now: Date,
): Alongside {
  return {
    text: (p) =>
      `INSERT INTO consent_receipts (id, navigation_id, browser_iss, browser_sub, displayed_destination, created_at)
       SELECT ${p(1)}::uuid, ${p(2)}::uuid, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}::timestamptz WHERE EXISTS (SELECT 1 FROM written)
       ON CONFLICT (navigation_id) DO NOTHING`,
    values: [randomUUID(), navigationId, browser.iss, browser.sub, displayedDestination, now],
  };
}
