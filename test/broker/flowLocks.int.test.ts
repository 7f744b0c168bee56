import { describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import type { BrowserResponse } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Transactions that lock flows and write the ledger, meeting: each test holds
// one back with a lock of its own until the other is queued where it would
// deadlock, then lets go. Postgres aborted one of them before the fixes.
describe('flow locks and the ledger', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice', 'bob', 'mallory', 'ops'] });

  // Two links of one user for one provider, both at the provider's Allow page: each verifying
  // transaction locked its own flow, then waited for the other's to settle it as a sibling.
  it('two callbacks of one user at once do not deadlock: one connects, the other is told it was completed meanwhile', async () => {
    const links = [
      await elicitConnection(stack, tokens.alice, 'reports_create', { title: 'deadlock one', body: '' }),
      await elicitConnection(stack, tokens.alice, 'reports_list', {}),
    ];
    // Each browser up to the Report Service's Allow page.
    const allowPages = await Promise.all(
      links.map(async (link) => {
        const run = await openConnectLink(stack, link.url, 'alice');
        const login = await run.browser.submitForm(run.review, {}, { form: '/connect/' });
        return {
          browser: run.browser,
          page: await run.browser.submitForm(login, { login: 'alice', password: DEV_PASSWORD }),
        };
      }),
    );
    for (const { page } of allowPages) expect(page.text).toContain('Allow access?');

    const { rows: flows } = await stack.db.pool.query<{ id: string }>(
      "SELECT id FROM elicitation_navigations WHERE subject_sub = 'alice' AND status = 'OUT_OF_BAND_PENDING'",
    );
    expect(flows).toHaveLength(2);
    // Hold both flows so the two callbacks queue behind this transaction and are let go together.
    const holder = await stack.db.pool.connect();
    let answers: BrowserResponse[];
    try {
      await holder.query('BEGIN');
      const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await holder.query('SELECT id FROM elicitation_navigations WHERE id = ANY($1::uuid[]) FOR UPDATE', [
        flows.map((f) => f.id),
      ]);
      const callbacks = Promise.all(
        allowPages.map(({ browser, page }) => browser.submitForm(page, {}, { form: '/confirm' })),
      );
      await until(
        async () => (await stack.db.pool.query<{ n: number }>(QUEUED_BEHIND, [rows[0]!.pid])).rows[0]!.n === 2,
      );
      await holder.query('COMMIT');
      answers = await callbacks;
    } finally {
      holder.release();
    }

    const outcomes = answers
      .map((a) =>
        a.status === 200 && a.text.includes('Report Service is connected')
          ? 'connected'
          : a.status === 409 && a.text.includes('completed meanwhile')
            ? 'completed meanwhile'
            : `HTTP ${a.status}`,
      )
      .sort();
    expect(outcomes).toEqual(['completed meanwhile', 'connected']);
    const { rows: after } = await stack.db.pool.query<{ status: string }>(
      "SELECT status FROM elicitation_navigations WHERE subject_sub = 'alice' ORDER BY status",
    );
    expect(after.map((r) => r.status)).toEqual(['REQUIREMENT_VERIFIED', 'REQUIREMENT_VERIFIED']);
    // The tokens of the one callback that connected, none of the other's.
    const { rows: stored } = await stack.db.pool.query<{ n: number }>(
      "SELECT count(DISTINCT navigation_id)::int AS n FROM secrets WHERE subject_sub = 'alice'",
    );
    expect(stored).toEqual([{ n: 1 }]);
  });

  // A ledger row takes the chain lock (migrations/0004_ledger_chain.sql) and then, for its foreign
  // key, a share lock on its flow: a refusal for a flow whose callback held it FOR UPDATE waited for
  // the callback, holding the chain lock the callback needed next.
  it('another user opening a link while its callback verifies it does not deadlock: the view is refused and recorded, the callback connects', async () => {
    const link = await elicitConnection(stack, tokens.bob, 'reports_create', {
      title: 'refused during the callback',
      body: '',
    });
    const mallory = await openConnectLink(stack, link.url, 'mallory');
    expect(mallory.review.status).toBe(403);
    const run = await openConnectLink(stack, link.url, 'bob');
    const login = await run.browser.submitForm(run.review, {}, { form: '/connect/' });
    const allow = await run.browser.submitForm(login, { login: 'bob', password: DEV_PASSWORD });
    expect(allow.text).toContain('Allow access?');

    // An uncommitted connection of bob's account holds the callback inside its transaction, after it locked the flow.
    const holder = await stack.db.pool.connect();
    let callback: BrowserResponse;
    let view: BrowserResponse;
    try {
      await holder.query('BEGIN');
      const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await holder.query(
        "INSERT INTO connections (id, subject_iss, subject_sub, provider, upstream_subject, connected_at, updated_at) VALUES (gen_random_uuid(), $1, 'bob', 'reports', 'rs-user-bob', now(), now())",
        [stack.dev.idp.issuer],
      );
      const answered = run.browser.submitForm(allow, {}, { form: '/confirm' });
      const callbackPid = await until(
        async () => (await stack.db.pool.query<{ pid: number }>(BLOCKED_BY, [rows[0]!.pid])).rows[0]?.pid,
      );
      // Mallory's view writes its refusal now: it waits for the flow (then deadlocks) or it does not wait at all.
      let viewed = false;
      const viewing = mallory.browser.get(link.url).finally(() => (viewed = true));
      await until(
        async () => viewed || (await stack.db.pool.query(BLOCKED_BY, [callbackPid])).rowCount! > 0 || undefined,
      );
      await holder.query('ROLLBACK');
      [callback, view] = await Promise.all([answered, viewing]);
    } finally {
      holder.release();
    }

    expect({ status: view.status, refused: view.text.includes('This link belongs to someone else') }).toEqual({
      status: 403,
      refused: true,
    });
    expect({ status: callback.status, connected: callback.text.includes('Report Service is connected') }).toEqual({
      status: 200,
      connected: true,
    });
    const { rows: refusals } = await stack.db.pool.query(
      "SELECT 1 FROM navigation_events WHERE event = 'subject_mismatch' AND actor = 'browser:mallory'",
    );
    expect(refusals).toHaveLength(2);
    const { rows: flows } = await stack.db.pool.query<{ status: string }>(
      "SELECT status FROM elicitation_navigations WHERE subject_sub = 'bob'",
    );
    expect(flows).toEqual([{ status: 'REQUIREMENT_VERIFIED' }]);
  });

  // A consent moves the flow by compare-and-set from the flow as its request read it; the second of
  // two at once finds it moved, locks it and goes on from there, as a consent of a flow already
  // pending does: both reach the provider, and the flow moves once.
  it('two consents of one link at once both reach the provider: the flow moves once, with one consent receipt', async () => {
    const link = await elicitConnection(stack, tokens.mallory, 'reports_create', { title: 'two consents', body: '' });
    const run = await openConnectLink(stack, link.url, 'mallory');
    const { rows: flows } = await stack.db.pool.query<{ id: string }>(
      'SELECT id FROM elicitation_navigations WHERE subject_sub = $1 AND status = $2',
      ['mallory', 'USER_REVIEW'],
    );
    expect(flows).toHaveLength(1);
    const answers = await whileHeld(stack.db.pool, flows[0]!.id, 2, () =>
      Promise.all([1, 2].map(() => run.browser.submitForm(run.review, {}, { form: '/connect/' }))),
    );

    for (const answer of answers)
      expect({ status: answer.status, url: new URL(answer.url).origin }).toEqual({
        status: 200,
        url: new URL(stack.dev.reports.issuer).origin,
      });
    const id = flows[0]!.id;
    const { rows: moves } = await stack.db.pool.query(
      "SELECT from_status, to_status FROM navigation_events WHERE navigation_id = $1 AND event = 'browser_consent' ORDER BY flow_seq",
      [id],
    );
    expect(moves).toEqual([
      { from_status: 'USER_REVIEW', to_status: 'NAVIGATION_ACCEPTED' },
      { from_status: 'NAVIGATION_ACCEPTED', to_status: 'OUT_OF_BAND_PENDING' },
    ]);
    const count = async (table: string) =>
      (
        await stack.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE navigation_id = $1`, [
          id,
        ])
      ).rows[0]!.n;
    expect({ receipts: await count('consent_receipts'), redirects: await count('oauth_transactions') }).toEqual({
      receipts: 1,
      redirects: 2,
    });
  });

  // An MRTR retry accepts the flow by compare-and-set from the flow as its request read it; the
  // second of two at once finds it moved, locks it and finds the first one's receipt.
  it('two retries of one verified flow at once accept it once: one receipt, one report, both answered with it', async () => {
    const args = { title: 'two retries', body: '' };
    const link = await elicitConnection(stack, tokens.ops, 'reports_create', args);
    const run = await openConnectLink(stack, link.url, 'ops');
    expect((await consentAndAuthorize(stack, run, 'ops')).status).toBe(200);
    const { rows: flows } = await stack.db.pool.query<{ id: string }>(
      'SELECT id FROM elicitation_navigations WHERE subject_sub = $1 AND status = $2',
      ['ops', 'REQUIREMENT_VERIFIED'],
    );
    expect(flows).toHaveLength(1);
    const id = flows[0]!.id;
    const answers = await whileHeld(stack.db.pool, id, 2, () =>
      Promise.all(
        [1, 2].map(() => retryConnection(stack, tokens.ops, 'reports_create', args, link.requestState, 'accept')),
      ),
    );

    const reports = answers.map((a) => {
      expect(a.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
      return (a.json.result as { structuredContent: { report: { id: string } } }).structuredContent.report.id;
    });
    expect(new Set(reports).size).toBe(1);
    const { rows: receipts } = await stack.db.pool.query(
      'SELECT outcome_status FROM operation_receipts WHERE navigation_id = $1',
      [id],
    );
    expect(receipts).toEqual([{ outcome_status: 'succeeded' }]);
    const { rows: accepted } = await stack.db.pool.query(
      'SELECT from_status, to_status FROM navigation_events WHERE navigation_id = $1 AND from_status = $2',
      [id, 'REQUIREMENT_VERIFIED'],
    );
    expect(accepted).toEqual([{ from_status: 'REQUIREMENT_VERIFIED', to_status: 'MRTR_RETRY_ACCEPTED' }]);
  });
});

/** The backend waiting for the given one, if any. */
const BLOCKED_BY = 'SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))';

/** Backends waiting for the holder, or for one that waits for it (a second waiter for a row queues behind the first). */
const QUEUED_BEHIND = `WITH direct AS (SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)))
  SELECT ((SELECT count(*) FROM direct) + (SELECT count(*) FROM pg_stat_activity
    WHERE pid NOT IN (SELECT pid FROM direct) AND pg_blocking_pids(pid) && ARRAY(SELECT pid FROM direct)))::int AS n`;

/** Runs `start` while a transaction holds the flow FOR UPDATE, and lets go once `queued` backends wait behind it. */
async function whileHeld<T>(pool: Pool, flowId: string, queued: number, start: () => Promise<T>): Promise<T> {
  const holder = await pool.connect();
  try {
    await holder.query('BEGIN');
    const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    await holder.query('SELECT id FROM elicitation_navigations WHERE id = $1 FOR UPDATE', [flowId]);
    const started = start();
    await until(async () => (await pool.query<{ n: number }>(QUEUED_BEHIND, [rows[0]!.pid])).rows[0]!.n === queued);
    await holder.query('COMMIT');
    return await started;
  } finally {
    holder.release();
  }
}

/** Polls the database (no fixed pause) until `probe` gives a value: the transactions get there when the machine lets them. */
async function until<T>(probe: () => Promise<T | undefined | false>): Promise<T> {
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
