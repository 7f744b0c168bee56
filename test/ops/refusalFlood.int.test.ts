import { describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { recordRefusal } from '../../src/ops/operatorGuard.js';
import { createLogger } from '../../src/shared/logger.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Each refused request to /ops wrote a row to operator_actions, which is append-only: a signed-in
// user with no operator role could grow it without bound, a row per request. Refusals are now
// counted: at most one row per subject per minute, its `refusals` the number it stands for.

describe('refused operator requests', () => {
  const { stack } = useBrokerStack();
  const refusalsOf = async (actor: string) =>
    (
      await stack.db.pool.query<{ refusals: number; path: string; created_at: Date }>(
        `SELECT refusals, details->>'path' AS path, created_at FROM operator_actions
          WHERE action = 'access_refused' AND actor = $1 ORDER BY id`,
        [actor],
      )
    ).rows;

  it(
    '1,000 refused requests write a bounded number of rows, whose counts add up to 1,000',
    { timeout: 120_000 },
    async () => {
      const alice = createTestBrowser({ fetch: stack.fetch });
      const form = await alice.get(`${stack.brokerUrl}/login?return_to=/`);
      expect((await alice.submitForm(form, { login: 'alice', password: DEV_PASSWORD })).text).toContain('Signed in as');
      const statuses: number[] = [];
      for (let batch = 0; batch < 40; batch++)
        statuses.push(
          ...(await Promise.all(
            Array.from({ length: 25 }, (_, i) =>
              alice.get(`${stack.brokerUrl}/ops/flows?page=${batch * 25 + i}`).then((r) => r.status),
            ),
          )),
        );
      expect(statuses.filter((s) => s === 403)).toHaveLength(1_000);
      const rows = await refusalsOf('web:alice');
      // One a minute: the run may straddle a minute's end.
      expect(rows.length).toBeGreaterThanOrEqual(1);
      expect(rows.length).toBeLessThanOrEqual(2);
      expect(rows.reduce((sum, r) => sum + r.refusals, 0)).toBe(1_000);
      expect(rows[0]!.path).toBe('/ops/flows');
    },
  );

  it('keeps one row per subject and minute: another subject, or the next minute, is a row of its own', async () => {
    let now = new Date('2026-03-01T10:00:05Z');
    const deps = { pool: stack.db.pool, clock: { now: () => now }, logger: createLogger({ level: 'silent' }) };
    const refuse = (actor: string, path: string) =>
      recordRefusal(deps, { method: 'GET', baseUrl: '/ops', path }, actor);
    await Promise.all(Array.from({ length: 20 }, () => refuse('web:mallory', '/')));
    await refuse('web:trent', '/stuck');
    now = new Date('2026-03-01T10:00:59.999Z');
    await refuse('web:mallory', '/flows');
    now = new Date('2026-03-01T10:01:00Z');
    await refuse('web:mallory', '/approvals');
    expect((await refusalsOf('web:mallory')).map((r) => [r.refusals, r.path, r.created_at.toISOString()])).toEqual([
      [21, '/ops', '2026-03-01T10:00:05.000Z'],
      [1, '/ops/approvals', '2026-03-01T10:01:00.000Z'],
    ]);
    expect((await refusalsOf('web:trent')).map((r) => [r.refusals, r.path])).toEqual([[1, '/ops/stuck']]);
  });

  it('still refuses any other change to a row, and any deletion', async () => {
    await expect(
      stack.db.pool.query(`UPDATE operator_actions SET reason = 'rewritten' WHERE actor = 'web:trent'`),
    ).rejects.toThrow();
    await expect(
      stack.db.pool.query(`UPDATE operator_actions SET refusals = refusals - 1 WHERE actor = 'web:mallory'`),
    ).rejects.toThrow();
    await expect(stack.db.pool.query(`DELETE FROM operator_actions WHERE actor = 'web:trent'`)).rejects.toThrow();
  });
});
