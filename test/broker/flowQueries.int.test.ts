import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Fetch } from '../../src/shared/httpClient.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The statements one complete connect flow sends to Postgres, step by step (BEGIN and COMMIT count):
// each is a round trip made while the request holds a pooled connection, so under load they are
// the flow's latency (npm run bench:flow measures the same per step). The bounds are the figures
// of a flow with nothing in its way; a statement added to a step must show up here.
const BOUNDS: Record<string, number> = {
  'POST /mcp elicit': 6,
  'GET /connect/:handle': 4,
  'GET /auth/callback': 1,
  'POST /connect/:handle': 4,
  'GET /oauth/callback/reports': 7,
  'GET /connect/done': 2,
  'POST /mcp retry': 6,
};

describe('the statements of one connect flow', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice', 'bob', 'mallory'] });

  // Every statement of this process: the broker runs in it, and the development servers use no database.
  let statements = 0;
  const query = pg.Client.prototype.query;
  beforeAll(() => {
    vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      statements++;
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query);
  });
  afterAll(() => {
    vi.restoreAllMocks();
  });

  const during = async <T>(fn: () => Promise<T>) => {
    const before = statements;
    const value = await fn();
    return { value, n: statements - before };
  };
  /** A browser whose requests to the broker add their statements to `byStep`, by method and path. */
  const countingBrowser = (byStep: Map<string, number>) =>
    createTestBrowser({
      fetch: (async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
        const url = new URL(String(input));
        const { value, n } = await during(() => stack.fetch(input, init));
        if (url.origin === stack.brokerUrl) {
          const step = `${init?.method ?? 'GET'} ${url.pathname.replace(/^\/connect\/[\w-]{43}$/, '/connect/:handle')}`;
          byStep.set(step, (byStep.get(step) ?? 0) + n);
        }
        return value;
      }) as Fetch,
    });

  it(`sends at most ${JSON.stringify(BOUNDS)}`, async () => {
    const args = { title: 'Counted', body: '' };
    // Once per provider and process, not per flow: its endpoints discovered and pinned (their
    // statements belong to no flow). Another user's call does it first.
    await elicitConnection(stack, tokens.mallory, 'reports_create', args);
    const elicit = await during(() => elicitConnection(stack, tokens.alice, 'reports_create', args));
    const byStep = new Map<string, number>();
    const run = await openConnectLink(stack, elicit.value.url, 'alice', countingBrowser(byStep));
    const done = await consentAndAuthorize(stack, run, 'alice');
    expect(done.status).toBe(200);
    const retry = await during(() =>
      retryConnection(stack, tokens.alice, 'reports_create', args, elicit.value.requestState, 'accept'),
    );
    expect(retry.value.json.result).toMatchObject({ structuredContent: { status: 'created' } });
    // What the fewer statements still write: the receipt names the connection it ran on, which notes its use.
    const { rows: used } = await stack.db.pool.query<{ named: boolean; noted: boolean }>(
      `SELECT r.connection_id = c.id AS named, c.last_used_at IS NOT NULL AS noted
         FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id
         JOIN connections c ON c.subject_sub = n.subject_sub AND c.provider = n.provider
        WHERE n.subject_sub = 'alice'`,
    );
    expect(used).toEqual([{ named: true, noted: true }]);

    const measured: Record<string, number> = {
      'POST /mcp elicit': elicit.n,
      ...Object.fromEntries(byStep),
      'POST /mcp retry': retry.n,
    };
    const over = Object.entries(measured).filter(([step, n]) => n > (BOUNDS[step] ?? 0));
    expect(over, JSON.stringify(measured)).toEqual([]);
    // Counted at all: every step named reads or writes something.
    expect(Object.keys(BOUNDS).filter((step) => !(measured[step]! > 0))).toEqual([]);
  });

  it('settles the other open flows of the user in the same statements as a callback that settles none', async () => {
    const flows = [];
    for (const title of ['First', 'Second', 'Third'])
      flows.push(await elicitConnection(stack, tokens.bob, 'reports_create', { title, body: '' }));
    const byStep = new Map<string, number>();
    const run = await openConnectLink(stack, flows[0]!.url, 'bob', countingBrowser(byStep));
    expect((await consentAndAuthorize(stack, run, 'bob')).status).toBe(200);
    const { rows } = await stack.db.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM elicitation_navigations WHERE subject_sub = 'bob' GROUP BY status`,
    );
    expect(rows).toEqual([{ status: 'REQUIREMENT_VERIFIED', n: 3 }]);
    expect(byStep.get('GET /oauth/callback/reports')).toBeLessThanOrEqual(BOUNDS['GET /oauth/callback/reports']!);
  });

  it('replaces a connection and its whole token set within the same bound', async () => {
    // alice is connected (the first test); her tokens gone, as after a provider's 401, the next call asks again.
    await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
    const args = { title: 'Again', body: '' };
    const elicit = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const byStep = new Map<string, number>();
    const run = await openConnectLink(stack, elicit.url, 'alice', countingBrowser(byStep));
    expect((await consentAndAuthorize(stack, run, 'alice')).status).toBe(200);
    expect(byStep.get('GET /oauth/callback/reports')).toBeLessThanOrEqual(BOUNDS['GET /oauth/callback/reports']!);
    const { rows } = await stack.db.pool.query<{ connections: number; kinds: string[] }>(
      `SELECT count(DISTINCT connection_id)::int AS connections, array_agg(kind ORDER BY kind) AS kinds
         FROM secrets WHERE subject_sub = 'alice'`,
    );
    expect(rows).toEqual([{ connections: 1, kinds: ['access_token', 'refresh_token'] }]);
  });
});
