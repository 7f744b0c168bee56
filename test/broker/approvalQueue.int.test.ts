import { beforeAll, describe, expect, it } from 'vitest';
import { startBrokerStack } from '../support/brokerStack.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { callTool, tokenFor } from '../support/mcpWire.js';
import { operatorCli } from '../support/operatorCli.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

type Cli = Awaited<ReturnType<typeof operatorCli>>;
const PENDING = 'io.connect-broker/pending';

describe('the approval queue for high-risk tools (HIGH_RISK_TOOLS=reports_create)', () => {
  const { stack, tokens } = useBrokerStack({ highRiskTools: ['reports_create'], retryWaitMs: 300 }, { users: ['bob'] });
  let ops: Cli;

  const one = async <T>(sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows[0] as T;
  const reportsTitled = async (title: string) => {
    const listed = await callTool(stack, tokens.bob, 'reports_list', {}, {}, {});
    return (listed.json.result?.['structuredContent'] as { reports: { title: string }[] }).reports.filter(
      (r) => r.title === title,
    );
  };
  // bob connects (forgetting any earlier connection, so the call goes through a flow) and the host retries.
  const verifiedFlow = async (args: { title: string; body: string }) => {
    await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'bob'");
    const elicited = await elicitConnection(stack, tokens.bob, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'bob'), 'bob');
    const flow = await one<{ id: string }>('SELECT id FROM elicitation_navigations WHERE purpose LIKE $1', [
      `%${args.title}%`,
    ]);
    return { ...elicited, flowId: flow.id };
  };
  const approvalOf = (flowId: string) =>
    one<{ id: string; status: string; reason: string | null; decided_by: string | null }>(
      'SELECT id, status, reason, decided_by FROM operation_approvals WHERE navigation_id = $1',
      [flowId],
    );

  beforeAll(async () => {
    ops = await operatorCli(stack);
  });

  it('holds a verified operation with a clear pending answer until an operator approves it; then it is done once', async () => {
    const args = { title: 'Wire transfer report', body: 'high risk' };
    const flow = await verifiedFlow(args);
    const held = await retryConnection(stack, tokens.bob, 'reports_create', args, flow.requestState, 'accept');
    const result = held.json.result as {
      resultType: string;
      requestState: string;
      inputRequests?: unknown;
      _meta: Record<string, { reason: string; approvalId: string; message: string }>;
    };
    expect(result.resultType).toBe('input_required');
    expect(result.inputRequests).toBeUndefined();
    expect(result.requestState).toEqual(expect.any(String));
    const approval = await approvalOf(flow.flowId);
    expect(approval).toEqual({
      id: result._meta[PENDING]!.approvalId,
      status: 'pending',
      reason: null,
      decided_by: null,
    });
    expect(result._meta[PENDING]).toMatchObject({
      reason: 'operator_approval',
      message: expect.stringContaining("waits for an operator's approval"),
    });
    expect(await one('SELECT status FROM elicitation_navigations WHERE id = $1', [flow.flowId])).toEqual({
      status: 'REQUIREMENT_VERIFIED',
    });
    expect(
      await one('SELECT count(*)::int AS n FROM operation_receipts WHERE navigation_id = $1', [flow.flowId]),
    ).toEqual({ n: 0 });

    // The host retries with the state it got: still held, the same approval (one row, one ledger entry).
    const stillHeld = await retryConnection(stack, tokens.bob, 'reports_create', args, result.requestState, undefined);
    expect(stillHeld.json.result).toMatchObject({
      resultType: 'input_required',
      _meta: { [PENDING]: { approvalId: approval.id } },
    });
    expect(
      await one(
        "SELECT count(*)::int AS n FROM navigation_events WHERE navigation_id = $1 AND event = 'approval_requested'",
        [flow.flowId],
      ),
    ).toEqual({ n: 1 });
    const queue = await ops('approvals', '--json');
    expect(JSON.parse(queue.output.trim().split('\n').at(-1)!)).toEqual([
      expect.objectContaining({ id: approval.id, navigationId: flow.flowId, tool: 'reports_create', subject: 'bob' }),
    ]);
    expect(await reportsTitled(args.title)).toEqual([]);

    expect((await ops('approve', approval.id)).code).toBe(2);
    const approved = await ops('approve', approval.id, '--reason', 'confirmed with bob by phone');
    expect(approved.code).toBe(0);
    expect(await approvalOf(flow.flowId)).toEqual({
      id: approval.id,
      status: 'approved',
      reason: 'confirmed with bob by phone',
      decided_by: 'cli:ops',
    });
    const done = await retryConnection(stack, tokens.bob, 'reports_create', args, result.requestState, undefined);
    expect(done.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: args.title } },
    });
    const again = await retryConnection(stack, tokens.bob, 'reports_create', args, result.requestState, undefined);
    expect(again.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    expect(await reportsTitled(args.title)).toHaveLength(1);
    expect(await one('SELECT status FROM elicitation_navigations WHERE id = $1', [flow.flowId])).toEqual({
      status: 'MRTR_RETRY_ACCEPTED',
    });
    const events = await stack.db.pool.query<{ event: string; actor: string }>(
      'SELECT event, actor FROM navigation_events WHERE navigation_id = $1 ORDER BY flow_seq',
      [flow.flowId],
    );
    expect(events.rows.slice(-3)).toEqual([
      { event: 'approval_requested', actor: 'system:approval' },
      { event: 'operator_approved', actor: 'cli:ops' },
      { event: 'mrtr_accept', actor: 'mcp:bob' },
    ]);
    const decidedTwice = await ops('reject', approval.id, '--reason', 'changed my mind');
    expect(decidedTwice.code).toBe(2);
    expect(decidedTwice.output).toContain('already approved by cli:ops');
  });

  it('ends the flow when an operator rejects it: the host is told, nothing is done, ever', async () => {
    const args = { title: 'Suspicious report', body: 'reject me' };
    const flow = await verifiedFlow(args);
    const held = await retryConnection(stack, tokens.bob, 'reports_create', args, flow.requestState, 'accept');
    const state = (held.json.result as { requestState: string }).requestState;
    const approval = await approvalOf(flow.flowId);
    const rejected = await ops('reject', approval.id, '--reason', 'not a request bob made');
    expect(rejected.code).toBe(0);
    expect(await one('SELECT status FROM elicitation_navigations WHERE id = $1', [flow.flowId])).toEqual({
      status: 'OPERATION_REJECTED',
    });
    const answer = await retryConnection(stack, tokens.bob, 'reports_create', args, state, undefined);
    expect(answer.json.result).toMatchObject({
      resultType: 'complete',
      isError: true,
      structuredContent: { status: 'rejected', approvalId: approval.id },
    });
    expect(JSON.stringify(answer.json.result)).toContain('not a request bob made');
    // The original state (with the host's accept) cannot revive it either.
    const revived = await retryConnection(stack, tokens.bob, 'reports_create', args, flow.requestState, 'accept');
    expect(revived.json.result).toMatchObject({ isError: true, structuredContent: { status: 'rejected' } });
    expect(
      await one('SELECT count(*)::int AS n FROM operation_receipts WHERE navigation_id = $1', [flow.flowId]),
    ).toEqual({ n: 0 });
    expect(await reportsTitled(args.title)).toEqual([]);
    expect(await one("SELECT actor, reason FROM operator_actions WHERE action = 'reject_operation'")).toEqual({
      actor: 'cli:ops',
      reason: 'not a request bob made',
    });
  });

  it("holds a connected user's direct high-risk call, and a repeat of it, until approved; the held state then does it once", async () => {
    const args = { title: 'Connected wire transfer', body: 'no link needed' };
    await verifiedFlow({ title: 'Connect bob first', body: '' });
    // bob is connected now: a call without requestState would have run at once.
    const first = await callTool(stack, tokens.bob, 'reports_create', args, {}, {});
    const held = first.json.result as {
      resultType: string;
      requestState: string;
      inputRequests?: unknown;
      _meta: Record<string, { approvalId: string }>;
    };
    expect(held).toMatchObject({
      resultType: 'input_required',
      requestState: expect.any(String),
      _meta: { [PENDING]: { reason: 'operator_approval' } },
    });
    expect(held.inputRequests).toBeUndefined();
    const repeat = await callTool(stack, tokens.bob, 'reports_create', args, {}, {});
    expect(repeat.json.result).toMatchObject({ resultType: 'input_required' });
    expect(await reportsTitled(args.title)).toEqual([]);
    // Each call is its own operation: a record born verified (no link presented) and a pending approval.
    const flows = (
      await stack.db.pool.query(
        'SELECT n.id, n.status, a.status AS approval FROM elicitation_navigations n JOIN operation_approvals a ON a.navigation_id = n.id WHERE n.purpose LIKE $1 ORDER BY n.created_at',
        [`%${args.title}%`],
      )
    ).rows;
    expect(flows).toEqual([
      { id: expect.any(String), status: 'REQUIREMENT_VERIFIED', approval: 'pending' },
      { id: expect.any(String), status: 'REQUIREMENT_VERIFIED', approval: 'pending' },
    ]);
    expect(
      await one('SELECT count(*)::int AS n FROM consent_receipts WHERE navigation_id = $1', [flows[0].id]),
    ).toEqual({ n: 0 });

    const approval = await approvalOf(flows[0].id);
    expect(approval.id).toBe(held._meta[PENDING]!.approvalId);
    expect((await ops('approve', approval.id, '--reason', 'bob confirmed the first one')).code).toBe(0);
    const done = await retryConnection(stack, tokens.bob, 'reports_create', args, held.requestState, undefined);
    expect(done.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: args.title } },
    });
    const again = await retryConnection(stack, tokens.bob, 'reports_create', args, held.requestState, undefined);
    expect(again.json.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(await reportsTitled(args.title)).toHaveLength(1);
    expect(await one('SELECT status FROM elicitation_navigations WHERE id = $1', [flows[0].id])).toEqual({
      status: 'MRTR_RETRY_ACCEPTED',
    });
    // The repeat still waits for its own decision.
    expect(await approvalOf(flows[1].id)).toMatchObject({ status: 'pending' });
  });

  it("refuses an operator's approval of their own operation", async () => {
    const opsToken = await tokenFor(stack, 'ops');
    const args = { title: 'Operator self-approval', body: '' };
    const elicited = await elicitConnection(stack, opsToken, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'ops'), 'ops');
    const held = await retryConnection(stack, opsToken, 'reports_create', args, elicited.requestState, 'accept');
    expect(held.json.result).toMatchObject({ resultType: 'input_required' });
    const flow = await one<{ id: string }>('SELECT id FROM elicitation_navigations WHERE purpose LIKE $1', [
      `%${args.title}%`,
    ]);
    const approval = await approvalOf(flow.id);
    const own = await ops('approve', approval.id, '--reason', 'it is mine');
    expect(own.code).not.toBe(0);
    expect(own.output).toContain('cannot approve your own operation');
    expect(await approvalOf(flow.id)).toMatchObject({ status: 'pending', decided_by: null });
  });

  it('wakes a retry that is waiting when the operator decides', async () => {
    const waiting = await startBrokerStack({ highRiskTools: ['reports_create'], retryWaitMs: 15_000 });
    try {
      const [carol, opsThere] = [await tokenFor(waiting, 'mallory'), await operatorCli(waiting)];
      const args = { title: 'Woken by approval', body: '' };
      const elicited = await elicitConnection(waiting, carol, 'reports_create', args);
      await consentAndAuthorize(waiting, await openConnectLink(waiting, elicited.url, 'mallory'), 'mallory');
      const started = Date.now();
      const retry = retryConnection(waiting, carol, 'reports_create', args, elicited.requestState, 'accept');
      let approvalId: string | undefined;
      while (!approvalId) {
        approvalId = (await waiting.db.pool.query<{ id: string }>('SELECT id FROM operation_approvals')).rows[0]?.id;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await opsThere('approve', approvalId, '--reason', 'looks fine')).code).toBe(0);
      const answer = await retry;
      expect(answer.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await waiting.close();
    }
  });
});
