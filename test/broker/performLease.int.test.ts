import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// One performer at a time for an accepted operation whose outcome is unknown.
describe('the perform lease of an operation receipt', () => {
  const { stack, tokens } = useBrokerStack({ retryWaitMs: 4_000 }, { users: ['alice'] });

  afterEach(() => {
    nock.cleanAll();
  });

  /** An accepted operation whose business call's answer was lost: its receipt is pending. */
  async function pendingOperation(args: { title: string; body: string }) {
    await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    nock(stack.dev.reports.issuer, { allowUnmocked: true })
      .post('/api/reports')
      .replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    const lost = await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    expect(lost.json.result).toMatchObject({ isError: true });
    const receipt = (
      await stack.db.pool.query<{ id: string }>(
        "SELECT r.id FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.purpose LIKE $1 AND r.outcome_status = 'pending'",
        [`%${args.title}%`],
      )
    ).rows[0]!;
    return { ...elicited, receiptId: receipt.id };
  }

  /** The Report Service, slowed down, counting the business calls that reach it and their keys. */
  function slowReportService(delayMs: number) {
    const keys: string[] = [];
    nock(stack.dev.reports.issuer, { allowUnmocked: true })
      .post('/api/reports')
      .times(20)
      .delay(delayMs)
      .reply(201, function reply(_uri, body) {
        keys.push(String(this.req.headers['idempotency-key']));
        const { title, body: text } = body as { title: string; body: string };
        return { report: { id: 'rep_leased0001', title, body: text, createdAt: new Date().toISOString() } };
      });
    return keys;
  }

  it('lets duplicate retries on two instances and the reconcile sweep re-perform a pending receipt only once at a time', async () => {
    const args = { title: 'Raced re-perform', body: 'once' };
    const op = await pendingOperation(args);
    const keys = slowReportService(600);

    const retries = [stack.brokerUrl, stack.brokerUrl, stack.secondUrl, stack.secondUrl, stack.brokerUrl].map((base) =>
      retryConnection(stack, tokens.alice, 'reports_create', args, op.requestState, 'accept', base),
    );
    const sweep = stack.reconcile(0, 10);
    const answers = await Promise.all(retries);
    await sweep;

    expect(keys).toEqual([op.receiptId]);
    for (const answer of answers) {
      expect(answer.json.result).toMatchObject({
        resultType: 'complete',
        structuredContent: { status: 'created', report: { id: 'rep_leased0001' } },
      });
    }
    const receipt = (
      await stack.db.pool.query(
        'SELECT outcome_status, perform_lease_owner, perform_lease_until FROM operation_receipts WHERE id = $1',
        [op.receiptId],
      )
    ).rows[0];
    expect(receipt).toEqual({ outcome_status: 'succeeded', perform_lease_owner: null, perform_lease_until: null });
  });

  it('tells a retry that waited past its bound that the operation is in progress, without calling the provider', async () => {
    const args = { title: 'Slow performer', body: 'wait' };
    const op = await pendingOperation(args);
    // Someone else holds the lease (another instance, mid-call) for longer than the retry may wait.
    await stack.db.pool.query(
      "UPDATE operation_receipts SET perform_lease_owner = gen_random_uuid(), perform_lease_until = now() + interval '1 minute' WHERE id = $1",
      [op.receiptId],
    );
    const keys = slowReportService(0);
    const answer = await retryConnection(stack, tokens.alice, 'reports_create', args, op.requestState, 'accept');
    expect(answer.json.result).toMatchObject({ isError: true });
    expect(JSON.stringify(answer.json.result)).toContain('being performed by another request');
    expect(keys).toEqual([]);
    expect((await stack.reconcile(0, 10)).redriven).toBe(0);
    expect(keys).toEqual([]);

    // The holder died: once its lease runs out the next retry performs it, with the same key.
    await stack.db.pool.query(
      "UPDATE operation_receipts SET perform_lease_until = now() - interval '1 second' WHERE id = $1",
      [op.receiptId],
    );
    const after = await retryConnection(stack, tokens.alice, 'reports_create', args, op.requestState, 'accept');
    expect(after.json.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(keys).toEqual([op.receiptId]);
  });
});
