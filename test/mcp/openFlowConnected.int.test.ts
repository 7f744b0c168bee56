import { describe, expect, it } from 'vitest';
import { findOpenFlow } from '../../src/broker/navigationRepo.js';
import { connectThroughList } from '../support/deadToken.js';
import { elicitConnection, retryConnection, URL_CAPS } from '../support/connectFlow.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A flow can be open while its user is connected: a call that read "not connected" just before
// another flow's callback committed the connection (and settled the flows open then) starts one
// after. The identical call, made again once connected, runs through that flow (never beside it),
// so the flow's own retry reads the outcome instead of doing the operation a second time. Whether
// the operation has such a flow is read in the connected call's one statement (connectedCallReads).
describe('a connected call whose operation has a flow still open', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });

  const flowOf = async (tool: string) =>
    (
      await stack.db.pool.query<{
        id: string;
        status: string;
        subject_iss: string;
        client_id: string | null;
        request_digest: string;
        expires_at: Date;
        receipts: number;
      }>(
        `SELECT n.id, n.status, n.subject_iss, n.client_id, n.request_digest, n.expires_at,
                (SELECT count(*)::int FROM operation_receipts r WHERE r.navigation_id = n.id) AS receipts
           FROM elicitation_navigations n WHERE n.subject_sub = 'alice' AND n.tool = $1`,
        [tool],
      )
    ).rows;

  it('is accepted through that flow, once', async () => {
    const args = { title: 'Quarterly', body: 'asked before connecting' };
    const first = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await connectThroughList(stack, tokens.alice, 'alice');
    const [settled] = await flowOf('reports_create');
    expect(settled!.status).toBe('REQUIREMENT_VERIFIED');
    // As the race leaves it: started open after the connection was stored.
    await stack.db.pool.query("UPDATE elicitation_navigations SET status = 'OUT_OF_BAND_PENDING' WHERE id = $1", [
      settled!.id,
    ]);
    const key = {
      subjectIss: settled!.subject_iss,
      subjectSub: 'alice',
      clientId: settled!.client_id ?? undefined,
      tool: 'reports_create',
      requestDigest: settled!.request_digest,
      lineage: 'mrtr',
    };
    const now = new Date();
    expect((await findOpenFlow(stack.db.pool, key, now))?.id).toBe(settled!.id);
    // Not another lineage's, another client's, or once it has expired.
    expect(await findOpenFlow(stack.db.pool, { ...key, lineage: 'nested' }, now)).toBeUndefined();
    expect(await findOpenFlow(stack.db.pool, { ...key, clientId: 'another-client' }, now)).toBeUndefined();
    expect(await findOpenFlow(stack.db.pool, key, new Date(settled!.expires_at.getTime() + 1))).toBeUndefined();

    const again = await callTool(stack, tokens.alice, 'reports_create', args, {}, URL_CAPS);
    expect(again.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: 'Quarterly' } },
    });
    const [accepted] = await flowOf('reports_create');
    expect(accepted).toMatchObject({ id: settled!.id, receipts: 1 });
    expect(await findOpenFlow(stack.db.pool, key, now)).toBeUndefined();

    const retried = await retryConnection(stack, tokens.alice, 'reports_create', args, first.requestState, 'accept');
    expect(retried.json.result).toMatchObject({ structuredContent: { report: { title: 'Quarterly' } } });
    const listed = await callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS);
    const { reports } = (listed.json.result as { structuredContent: { reports: { title: string }[] } })
      .structuredContent;
    expect(reports.filter((r) => r.title === 'Quarterly')).toHaveLength(1);
  });
});
