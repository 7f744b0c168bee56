import { beforeAll, describe, expect, it } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { initialize } from '../support/legacyFaultScenarios.js';
import { callTool } from '../support/mcpWire.js';
import { operatorCli } from '../support/operatorCli.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An operator's decision on a held operation reads the same on both eras (the call driver,
// src/mcp/calls/callDriver.ts): held, the host learns why and which approval; rejected, a complete
// error with status "rejected" and the approval's id, nothing done, on 2026-07-28 and on 2025-11-25 alike.

const PENDING = 'io.connect-broker/pending';

describe("an operator's decision reads the same on both eras (HIGH_RISK_TOOLS=reports_create)", () => {
  const { stack, tokens } = useBrokerStack({ highRiskTools: ['reports_create'], retryWaitMs: 300 }, { users: ['bob'] });
  let ops: Awaited<ReturnType<typeof operatorCli>>;

  beforeAll(async () => {
    ops = await operatorCli(stack);
    // bob connects once; every call below is a connected user's direct high-risk call.
    const elicited = await elicitConnection(stack, tokens.bob, 'reports_create', { title: 'connect bob', body: '' });
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'bob'), 'bob');
  });

  const legacyCall = async (args: Record<string, unknown>) => {
    const session = await initialize(stack, tokens.bob);
    try {
      const call = await session.start('tools/call', { name: 'reports_create', arguments: args });
      return (await call.next((m) => m.id === call.requestId)).result as Record<string, unknown>;
    } finally {
      await session.end();
    }
  };
  const reportsTitled = async (title: string) =>
    (
      await stack.db.pool.query(
        'SELECT count(*)::int AS n FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.purpose LIKE $1',
        [`%${title}%`],
      )
    ).rows[0].n as number;

  it('held, then rejected: the same status and approval on 2026-07-28 and 2025-11-25, nothing done', async () => {
    const modernArgs = { title: 'Modern transfer', body: 'held' };
    const legacyArgs = { title: 'Legacy transfer', body: 'held' };

    const modernHeld = await callTool(stack, tokens.bob, 'reports_create', modernArgs, {}, {});
    const held = modernHeld.json.result as {
      resultType: string;
      requestState: string;
      _meta: Record<string, { approvalId: string }>;
    };
    expect(held.resultType).toBe('input_required');
    const modernApproval = held._meta[PENDING]!.approvalId;

    const legacyHeld = await legacyCall(legacyArgs);
    expect(legacyHeld).toMatchObject({
      isError: true,
      structuredContent: { status: 'pending', reason: 'operator_approval', approvalId: expect.any(String) },
    });
    const legacyApproval = (legacyHeld['structuredContent'] as { approvalId: string }).approvalId;
    expect(legacyApproval).not.toBe(modernApproval);

    for (const id of [modernApproval, legacyApproval])
      expect((await ops('reject', id, '--reason', 'not a transfer bob asked for')).code).toBe(0);

    const modern = (
      await retryConnection(stack, tokens.bob, 'reports_create', modernArgs, held.requestState, undefined)
    ).json.result as Record<string, unknown>;
    // The identical call joins its held operation (the -32042 lineage's rule) and learns the decision.
    const legacy = await legacyCall(legacyArgs);
    expect(modern).toMatchObject({
      isError: true,
      structuredContent: { status: 'rejected', approvalId: modernApproval },
    });
    expect(legacy).toMatchObject({
      isError: true,
      structuredContent: { status: 'rejected', approvalId: legacyApproval },
    });
    expect(JSON.stringify(legacy)).toContain('not a transfer bob asked for');
    expect(await reportsTitled('transfer')).toBe(0);
  });
});
