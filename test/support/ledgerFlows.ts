import { advance } from '../../src/broker/advance.js';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import type { Pool } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/transaction.js';
import { navigationFixture } from './navigationFixture.js';

/**
 * Three flows, each moved in two transactions (one step, then two in one statement), the three
 * at once: 9 ledger rows, 3 per flow. Returns the flows' ids, sorted.
 */
export async function moveThreeFlows(pool: Pool): Promise<string[]> {
  const ids = await Promise.all(
    [0, 1, 2].map(async () => {
      const n = navigationFixture();
      await insertNavigation(pool, n);
      const reviewed = await withTransaction(pool, (tx) =>
        advance(tx, n, 'present', { actor: 'test', now: new Date() }),
      );
      await withTransaction(pool, (tx) =>
        advance(tx, reviewed, ['host_accept', 'browser_consent'], { actor: 'test', now: new Date() }),
      );
      return n.id;
    }),
  );
  return ids.sort();
}
