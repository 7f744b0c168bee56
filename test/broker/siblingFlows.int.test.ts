import { describe, expect, it } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { reportsAt } from '../support/forgedTokens.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

type Created = { status: string; report: { id: string; title: string } };

// MRTR: an operation whose flow is still open is never performed beside it.
describe('sibling flows on the 2026-07-28 path', () => {
  const { stack, tokens } = useBrokerStack({ retryWaitMs: 300 }, { users: ['alice'] });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const flowOf = async (title: string) =>
    (await query('SELECT id, status FROM elicitation_navigations WHERE purpose LIKE $1', [`%${title}%`]))[0] as {
      id: string;
      status: string;
    };

  it('accepts the retry through its own flow once a sibling link of the same provider connected the user', async () => {
    const args = { title: 'MRTR sibling', body: '' };
    const b = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const c = await elicitConnection(stack, tokens.alice, 'reports_list', {});
    await consentAndAuthorize(stack, await openConnectLink(stack, c.url, 'alice'), 'alice');
    expect((await flowOf(args.title)).status).toBe('REQUIREMENT_VERIFIED');

    const done = await retryConnection(stack, tokens.alice, 'reports_create', args, b.requestState, 'accept');
    expect(done.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    const flow = await flowOf(args.title);
    expect(flow.status).toBe('MRTR_RETRY_ACCEPTED');
    expect(
      await query('SELECT count(*)::int AS n FROM operation_receipts WHERE navigation_id = $1', [flow.id]),
    ).toEqual([{ n: 1 }]);
    expect((await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === args.title)).toHaveLength(1);
  });

  it('settles an open flow of the same operation when the same call comes again connected, and does it once', async () => {
    const args = { title: 'MRTR open beside a connection', body: '' };
    // The flow starts while alice is not connected; her connection comes back without settling it.
    await stack.db.pool.query("CREATE TABLE kept_secrets AS SELECT * FROM secrets WHERE subject_sub = 'alice'");
    await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
    const b = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await stack.db.pool.query('INSERT INTO secrets SELECT * FROM kept_secrets');
    expect((await flowOf(args.title)).status).toBe('USER_REVIEW');

    // The same call again (no requestState): accepted through the open flow, with a receipt.
    const again = await callTool(stack, tokens.alice, 'reports_create', args, {}, {});
    expect(again.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    const reportId = (again.json.result?.['structuredContent'] as Created).report.id;
    const flow = await flowOf(args.title);
    expect(flow.status).toBe('MRTR_RETRY_ACCEPTED');
    // The host's retry of the first call reads the same outcome; the user's link connects nothing.
    const retried = await retryConnection(stack, tokens.alice, 'reports_create', args, b.requestState, 'accept');
    expect((retried.json.result?.['structuredContent'] as Created).report.id).toBe(reportId);
    expect((await openConnectLink(stack, b.url, 'alice')).review.text).toContain('Nothing to do here');
    expect((await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === args.title)).toHaveLength(1);
  });
});
