import { afterEach, describe, expect, it } from 'vitest';
import type { BrokerStack } from '../../support/brokerStack.js';
import { consentAndAuthorize, openConnectLink } from '../../support/connectFlow.js';
import {
  connectThroughList,
  expectNoTokenIn,
  FORGOTTEN,
  forgottenEvents,
  killStoredToken,
} from '../../support/deadToken.js';
import { reportsAt } from '../../support/forgedTokens.js';
import {
  closeLegacy,
  connectLegacy,
  expectUrlElicitation,
  internalErrors,
  until,
  type Created,
} from '../../support/legacySdkClient.js';
import { toolCalls } from '../../support/sdkClient.js';
import type { BrowserResponse } from '../../support/testBrowser.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

// An upstream 401 on the 2025-11-25 wire, with the official SDK client: the
// connection is forgotten and the user asked again, in the lineage's own way.

function suite(lineage: 'nested' | 'error', body: (ctx: { stack: () => BrokerStack; alice: () => string }) => void) {
  describe(`an upstream 401 on a 2025-11-25 session, ${lineage === 'nested' ? 'nested' : '-32042'} lineage`, () => {
    const { stack, tokens } = useBrokerStack(
      { legacyUrlElicitation: lineage, legacyWaitMs: 10_000 },
      { users: ['alice'] },
    );
    afterEach(() => {
      expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
    });
    body({ stack: () => stack, alice: () => tokens.alice });
  });
}

const titled = async (stack: BrokerStack, title: string) =>
  (await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === title);
const secretsOf = async (stack: BrokerStack) =>
  (await stack.db.pool.query("SELECT kind FROM secrets WHERE subject_sub = 'alice'")).rows.length;

suite('nested', ({ stack, alice }) => {
  it('a connected call refused with 401 forgets the token and asks on its own stream; the user connects and the same call creates the report once', async () => {
    const args = { title: 'Legacy nested, dead token', body: 'b' };
    await connectThroughList(stack(), alice(), 'alice');
    const killed = await killStoredToken(stack(), 'alice');
    let browser: Promise<BrowserResponse> | undefined;
    const legacy = await connectLegacy(stack(), alice(), {
      url: (params) => {
        browser = openConnectLink(stack(), params.url, 'alice').then((run) =>
          consentAndAuthorize(stack(), run, 'alice'),
        );
        return { action: 'accept' };
      },
    });
    try {
      const result = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ status: 'created', report: { title: args.title } });
      await browser;
      expect(legacy.urlAsks).toHaveLength(1);
      expect(toolCalls(legacy.sent)).toHaveLength(1);
      expect(await forgottenEvents(stack(), killed.navigationId)).toEqual([FORGOTTEN]);
      const receipts = await stack().db.pool.query(
        'SELECT lineage, outcome_status FROM operation_receipts WHERE navigation_id = $1',
        [legacy.urlAsks[0]!.elicitationId],
      );
      expect(receipts.rows).toEqual([{ lineage: 'nested', outcome_status: 'succeeded' }]);
      expect(await secretsOf(stack())).toBe(2);
      expect(await titled(stack(), args.title)).toHaveLength(1);
      expectNoTokenIn(stack(), killed, [JSON.stringify(result)]);
    } finally {
      await closeLegacy(legacy);
    }
  });
});

suite('error', ({ stack, alice }) => {
  it('a connected call refused with 401 forgets the token and ends with -32042; the retry after connecting creates the report once', async () => {
    const args = { title: 'Legacy -32042, dead token', body: 'b' };
    await connectThroughList(stack(), alice(), 'alice');
    const killed = await killStoredToken(stack(), 'alice');
    const legacy = await connectLegacy(stack(), alice(), {});
    try {
      const [elicitation] = (await expectUrlElicitation(legacy, 'reports_create', args)).elicitations;
      expect(await secretsOf(stack())).toBe(0);
      expect(await forgottenEvents(stack(), killed.navigationId)).toEqual([FORGOTTEN]);
      await consentAndAuthorize(stack(), await openConnectLink(stack(), elicitation!.url, 'alice'), 'alice');
      const retried = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(retried.structuredContent).toMatchObject({ status: 'created', report: { title: args.title } });
      const again = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect((again.structuredContent as Created).report.id).toBe((retried.structuredContent as Created).report.id);
      expect(await titled(stack(), args.title)).toHaveLength(1);
      expectNoTokenIn(stack(), killed, [JSON.stringify(retried), JSON.stringify(again)]);
    } finally {
      await closeLegacy(legacy);
    }
  });

  it('a retry accepted after connecting whose token gets a 401 records the receipt failed and says reconnect; calling again asks anew and does it once, never the refused one', async () => {
    const args = { title: 'Legacy -32042, refused retry', body: 'b' };
    await stack().db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
    const legacy = await connectLegacy(stack(), alice(), {});
    try {
      const [first] = (await expectUrlElicitation(legacy, 'reports_create', args)).elicitations;
      await consentAndAuthorize(stack(), await openConnectLink(stack(), first!.url, 'alice'), 'alice');
      await until('the completion notification', () => (legacy.completed.length > 0 ? true : undefined));
      const killed = await killStoredToken(stack(), 'alice');

      const refused = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toEqual({
        status: 'reconnect_required',
        error: 'upstream_unauthorized',
        provider: 'reports',
      });
      const receipt = await stack().db.pool.query(
        'SELECT outcome_status, outcome FROM operation_receipts WHERE navigation_id = $1',
        [first!.elicitationId],
      );
      expect(receipt.rows).toEqual([
        { outcome_status: 'failed', outcome: { error: 'upstream_unauthorized', provider: 'reports' } },
      ]);
      expect(await forgottenEvents(stack(), first!.elicitationId)).toEqual([FORGOTTEN]);

      // The identical call is a new operation now: a new link, not the refused outcome.
      const [second] = (await expectUrlElicitation(legacy, 'reports_create', args)).elicitations;
      expect(second!.elicitationId).not.toBe(first!.elicitationId);
      await consentAndAuthorize(stack(), await openConnectLink(stack(), second!.url, 'alice'), 'alice');
      const created = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(created.structuredContent).toMatchObject({ status: 'created', report: { title: args.title } });
      expect(await stack().reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
      expect(await titled(stack(), args.title)).toHaveLength(1);
      expectNoTokenIn(stack(), killed, [JSON.stringify(refused), JSON.stringify(created)]);
    } finally {
      await closeLegacy(legacy);
    }
  });
});
