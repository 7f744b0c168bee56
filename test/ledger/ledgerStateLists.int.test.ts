import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advance } from '../../src/broker/advance.js';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { withTransaction } from '../../src/db/transaction.js';
import { findReconcileFindings } from '../../src/ledger/ledgerQueriesRepo.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// The operators' queries name their states through the transition table; these
// pin the places where a list written out in SQL once went stale.
describe('ledger queries over every state the transition table defines', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db.drop();
  });

  const insertSecret = async (navigationId: string | null) => {
    const id = randomUUID();
    const now = new Date();
    // A secret belongs to a connection (migrations/0019_connection_accounts.sql): one of its own.
    await db.pool.query(
      `INSERT INTO connections (id, subject_iss, subject_sub, provider, connected_at, updated_at)
       VALUES ($1, 'https://idp.test', $2, 'reports', $3, $3)`,
      [id, `user-${id}`, now],
    );
    await db.pool.query(
      `INSERT INTO secrets (id, connection_id, subject_iss, subject_sub, provider, kind, ciphertext, key_id, navigation_id, created_at, updated_at)
       VALUES ($1, $1, 'https://idp.test', $2, 'reports', 'access_token', $3, 'k1', $4, $5, $5)`,
      [id, `user-${id}`, randomBytes(16), navigationId, now],
    );
    return id;
  };

  it('does not report the secret of a rejected operation as a secret without a verified flow', async () => {
    const rejected = navigationFixture('CREATED', { subject: { iss: 'https://idp.test', sub: 'carol' } });
    const by = { actor: 'test:seed', now: new Date() };
    await withTransaction(db.pool, async (tx) => {
      await insertNavigation(tx, rejected);
      await advance(
        tx,
        rejected,
        ['present', 'browser_consent', 'browser_consent', 'callback_received', 'callback_verified', 'operator_reject'],
        by,
      );
    });
    const ofRejected = await insertSecret(rejected.id);
    const orphan = await insertSecret(null);

    const findings = await findReconcileFindings(db.pool, new Date(), 0);
    const orphans = findings.filter((f) => f.kind === 'secret_without_verified_flow').map((f) => f.id);
    expect(orphans).toContain(orphan);
    expect(orphans).not.toContain(ofRejected);
  });
});
