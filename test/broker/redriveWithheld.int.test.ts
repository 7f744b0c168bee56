import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import {
  consentAndAuthorize,
  elicitConnection,
  GITHUB_FORMS,
  openConnectLink,
  retryConnection,
} from '../support/connectFlow.js';
import { devGithubIssues, devGithubToken } from '../support/devGithubReader.js';
import { tokenFor } from '../support/mcpWire.js';
import { operatorCli } from '../support/operatorCli.js';

// An operation the provider cannot dedupe (github_create_issue: GitHub honours
// no idempotency key) whose outcome is unknown — the answer was lost after
// the request left — is never performed again by the reconcile sweep on its
// own: it waits as a finding until an operator re-drives it, and then it is
// performed once.

describe('no automatic re-drive where the provider cannot dedupe', () => {
  let stack: BrokerStack;
  let alice: string;
  let bob: string;
  let ops: Awaited<ReturnType<typeof operatorCli>>;

  beforeAll(async () => {
    stack = await startBrokerStack();
    alice = await tokenFor(stack, 'alice');
    bob = await tokenFor(stack, 'bob');
    ops = await operatorCli(stack);
  });
  afterEach(() => nock.cleanAll());
  afterAll(async () => {
    await stack?.close();
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const issuesTitled = async (title: string, repository = 'alice/demo') => {
    const token = await devGithubToken(stack.dev.github!, stack.fetch, repository.split('/')[0]!);
    return (await devGithubIssues(stack.dev.github!, stack.fetch, token, repository)).filter((i) => i.title === title);
  };

  it('holds the unknown outcome as a finding, sends nothing again, and performs it once when an operator asks', async () => {
    const args = { repository: 'alice/demo', title: 'Answer lost on the way back' };
    const elicited = await elicitConnection(stack, alice, 'github_create_issue', args);
    await consentAndAuthorize(
      stack,
      await openConnectLink(stack, elicited.url, 'alice'),
      'alice',
      'Allow',
      GITHUB_FORMS,
    );

    // The create leaves the broker and its answer never comes back: the outcome is unknown.
    const origin = stack.dev.github!.origin;
    const lost = nock(origin, { allowUnmocked: true })
      .post('/api/v3/repos/alice/demo/issues')
      .replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    const failed = await retryConnection(stack, alice, 'github_create_issue', args, elicited.requestState, 'accept');
    expect(lost.isDone()).toBe(true);
    expect(failed.json.result).toMatchObject({ isError: true });
    const [receipt] = await query("SELECT id, navigation_id FROM operation_receipts WHERE outcome_status = 'pending'");
    expect(receipt).toBeDefined();

    // Every sweep, however old the receipt: no request to GitHub, one ledger finding, the receipt still pending.
    const watch = nock(origin, { allowUnmocked: true }).post('/api/v3/repos/alice/demo/issues').reply(500);
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 1 });
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
    expect(watch.isDone()).toBe(false);
    nock.cleanAll();
    const events = async () =>
      (
        await query('SELECT event, actor FROM navigation_events WHERE navigation_id = $1 ORDER BY id', [
          receipt.navigation_id,
        ])
      ).map((e) => e.event);
    expect((await events()).filter((e) => e === 'redrive_withheld')).toHaveLength(1);
    expect(await query('SELECT outcome_status FROM operation_receipts WHERE id = $1', [receipt.id])).toEqual([
      { outcome_status: 'pending' },
    ]);
    // The operator sees it among the findings.
    const findings = await ops('reconcile', '--grace', '0', '--json');
    expect(findings.output).toContain(receipt.id);

    // The operator decides: the next sweep performs it, once.
    expect((await ops('redrive', receipt.id, '--reason', 'checked GitHub: no such issue')).code).toBe(0);
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 1, waiting: 0 });
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
    expect(await issuesTitled(args.title)).toHaveLength(1);
    expect((await events()).slice(-3)).toEqual(['operator_redrive', 'redrive_attempted', 'outcome_redriven']);
    // The host's retry answers the recorded outcome.
    const retried = await retryConnection(stack, alice, 'github_create_issue', args, elicited.requestState, 'accept');
    expect(retried.json.result).toMatchObject({
      structuredContent: { status: 'created', issue: { title: args.title } },
    });
    expect(await issuesTitled(args.title)).toHaveLength(1);
  });

  it('an operator re-drive that fails again is not repeated on its own', async () => {
    // bob, not yet connected: his call goes through a flow and a receipt.
    const args = { repository: 'bob/demo', title: 'Twice unknown' };
    const elicited = await elicitConnection(stack, bob, 'github_create_issue', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'bob'), 'bob', 'Allow', GITHUB_FORMS);
    const origin = stack.dev.github!.origin;
    nock(origin, { allowUnmocked: true })
      .post('/api/v3/repos/bob/demo/issues')
      .times(2)
      .replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    await retryConnection(stack, bob, 'github_create_issue', args, elicited.requestState, 'accept');
    const [receipt] = await query("SELECT id FROM operation_receipts WHERE outcome_status = 'pending'");
    await stack.reconcile(0, 10);
    expect((await ops('redrive', receipt.id, '--reason', 'try once')).code).toBe(0);
    // The attempt is lost too: it counts as the operator's one attempt.
    expect((await stack.reconcile(0, 10)).redriven).toBe(0);
    nock.cleanAll();
    const watch = nock(origin, { allowUnmocked: true }).post('/api/v3/repos/bob/demo/issues').reply(500);
    await query(
      "UPDATE operation_receipts SET redrive_after = now() - interval '1 hour' WHERE id = $1 AND redrive_after <> 'infinity'",
      [receipt.id],
    );
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
    expect(watch.isDone()).toBe(false);
    expect(await issuesTitled(args.title, 'bob/demo')).toHaveLength(0);
  });
});
