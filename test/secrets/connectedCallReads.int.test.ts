import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A connected user's call reads their connections to the provider and the chosen one's access token
// in one statement (findConnectionsWithAccessFor): a round trip a call no longer waits for. A stale
// token still takes the refresh path, which reads the secrets again under its own rules.

describe('a connected call reads its connection and access token', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });

  const statementsOf = async (run: () => Promise<unknown>) => {
    const texts: string[] = [];
    const query = pg.Client.prototype.query;
    vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as string | { text?: string };
      texts.push(typeof first === 'string' ? first : (first.text ?? ''));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query);
    try {
      await run();
    } finally {
      vi.restoreAllMocks();
    }
    return texts.map((t) => t.replace(/\s+/g, ' ').trim());
  };
  afterEach(() => vi.restoreAllMocks());

  it('in one statement, its open-flow check included, and uses the token it read', async () => {
    const args = { title: 'Setup', body: 'connect once' };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');

    let listed: Awaited<ReturnType<typeof callTool>> | undefined;
    const texts = await statementsOf(async () => {
      listed = await callTool(stack, tokens.alice, 'reports_list', {}, {}, {});
    });
    expect(listed!.json.result).toMatchObject({ structuredContent: { reports: [{ title: 'Setup' }] } });
    const reads = texts.filter((t) => /\b(FROM|JOIN) (connections|secrets)\b/.test(t));
    // The whole call is that statement: whether the operation has a flow still open is read in it too.
    expect(texts).toHaveLength(1);
    expect(reads).toHaveLength(1);
    expect(reads[0]).toMatch(/FROM elicitation_navigations/);
    expect(reads[0]).toMatch(/LEFT JOIN connections c .* LEFT JOIN secrets s/);
  });

  it('still reads them once a migration adds a column to either table (its statement is prepared)', async () => {
    const list = () => callTool(stack, tokens.alice, 'reports_list', {}, {}, {});
    expect((await list()).json.result).toMatchObject({ structuredContent: { reports: [{ title: 'Setup' }] } });
    await stack.db.pool.query('ALTER TABLE connections ADD COLUMN later_column text');
    await stack.db.pool.query('ALTER TABLE secrets ADD COLUMN later_column text');
    try {
      for (let i = 0; i < 12; i++) {
        expect((await list()).json.result).toMatchObject({ structuredContent: { reports: [{ title: 'Setup' }] } });
      }
    } finally {
      await stack.db.pool.query('ALTER TABLE connections DROP COLUMN later_column');
      await stack.db.pool.query('ALTER TABLE secrets DROP COLUMN later_column');
    }
  });

  it('reads the secrets again to refresh a token that is stale', async () => {
    await stack.db.pool.query(
      "UPDATE secrets SET expires_at = now() - interval '1 minute' WHERE subject_sub = 'alice' AND kind = 'access_token'",
    );
    let listed: Awaited<ReturnType<typeof callTool>> | undefined;
    const texts = await statementsOf(async () => {
      listed = await callTool(stack, tokens.alice, 'reports_list', {}, {}, {});
    });
    expect(listed!.json.result).toMatchObject({ structuredContent: { reports: [{ title: 'Setup' }] } });
    expect(texts.some((t) => /FROM secrets WHERE connection_id = \$1/.test(t))).toBe(true);
    const { rows } = await stack.db.pool.query<{ fresh: boolean }>(
      "SELECT expires_at > now() AS fresh FROM secrets WHERE subject_sub = 'alice' AND kind = 'access_token'",
    );
    expect(rows).toEqual([{ fresh: true }]);
  });
});
