import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { elicitConnection, openConnectLink } from '../support/connectFlow.js';
import { tokenFor } from '../support/mcpWire.js';
import type { BrowserResponse } from '../support/testBrowser.js';

// Two links of one user for one provider, both at the provider's Allow page,
// and both callbacks arriving together: each verifying transaction locked its
// own flow, then waited for the other's to settle it as a sibling.
describe('callbacks of sibling flows at once', () => {
  let stack: BrokerStack;
  let alice: string;

  beforeAll(async () => {
    stack = await startBrokerStack();
    alice = await tokenFor(stack, 'alice');
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('two callbacks of one user at once do not deadlock: one connects, the other is told it was completed meanwhile', async () => {
    const links = [await elicitConnection(stack, alice, 'reports_create', { title: 'deadlock one', body: '' }), await elicitConnection(stack, alice, 'reports_list', {})];
    // Each browser up to the Report Service's Allow page.
    const allowPages = await Promise.all(
      links.map(async (link) => {
        const run = await openConnectLink(stack, link.url, 'alice');
        const login = await run.browser.submitForm(run.review, {}, { form: '/connect/' });
        return { browser: run.browser, page: await run.browser.submitForm(login, { login: 'alice', password: DEV_PASSWORD }) };
      }),
    );
    for (const { page } of allowPages) expect(page.text).toContain('Allow access?');

    const { rows: flows } = await stack.db.pool.query<{ id: string }>("SELECT id FROM elicitation_navigations WHERE subject_sub = 'alice' AND status = 'OUT_OF_BAND_PENDING'");
    expect(flows).toHaveLength(2);
    // Hold both flows so the two callbacks queue behind this transaction and are let go together.
    const holder = await stack.db.pool.connect();
    let answers: BrowserResponse[];
    try {
      await holder.query('BEGIN');
      const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await holder.query('SELECT id FROM elicitation_navigations WHERE id = ANY($1::uuid[]) FOR UPDATE', [flows.map((f) => f.id)]);
      const callbacks = Promise.all(allowPages.map(({ browser, page }) => browser.submitForm(page, {}, { form: '/confirm' })));
      await until(async () => (await stack.db.pool.query<{ n: number }>(QUEUED_BEHIND, [rows[0]!.pid])).rows[0]!.n === 2);
      await holder.query('COMMIT');
      answers = await callbacks;
    } finally {
      holder.release();
    }

    const outcomes = answers.map((a) => (a.status === 200 && a.text.includes('Report Service is connected') ? 'connected' : a.status === 409 && a.text.includes('completed meanwhile') ? 'completed meanwhile' : `HTTP ${a.status}`)).sort();
    expect(outcomes).toEqual(['completed meanwhile', 'connected']);
    const { rows: after } = await stack.db.pool.query<{ status: string }>("SELECT status FROM elicitation_navigations WHERE subject_sub = 'alice' ORDER BY status");
    expect(after.map((r) => r.status)).toEqual(['REQUIREMENT_VERIFIED', 'REQUIREMENT_VERIFIED']);
    // The tokens of the one callback that connected, none of the other's.
    const { rows: stored } = await stack.db.pool.query<{ n: number }>("SELECT count(DISTINCT navigation_id)::int AS n FROM secrets WHERE subject_sub = 'alice'");
    expect(stored).toEqual([{ n: 1 }]);
  });
});

/** Backends waiting for the holder, or for one that waits for it (a second waiter for a row queues behind the first). */
const QUEUED_BEHIND = `WITH direct AS (SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)))
  SELECT ((SELECT count(*) FROM direct) + (SELECT count(*) FROM pg_stat_activity
    WHERE pid NOT IN (SELECT pid FROM direct) AND pg_blocking_pids(pid) && ARRAY(SELECT pid FROM direct)))::int AS n`;

/** Polls a condition of the database (no fixed pause): the callbacks reach the lock when the machine lets them. */
async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setImmediate(resolve));
}
