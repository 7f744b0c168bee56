import { afterEach, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../../src/dev/devUsers.js';
import { consentAndAuthorize, openConnectLink } from '../../support/connectFlow.js';
import { reportsAt } from '../../support/forgedTokens.js';
import {
  closeLegacy,
  connectLegacy,
  expectUrlElicitation,
  internalErrors,
  until,
  type Created,
  type LegacyClient,
} from '../../support/legacySdkClient.js';
import { operatorCli } from '../../support/operatorCli.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

// Exactly once and approvals on the 2025-11-25 wire, with the official SDK client.

describe('the -32042 lineage when the user connects through another link of the same provider', () => {
  const { stack, tokens } = useBrokerStack(
    { legacyUrlElicitation: 'error', legacyWaitMs: 2_000, retryWaitMs: 300 },
    { users: ['alice'] },
  );

  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;

  it('does a -32042 operation once when its link and a sibling link of the same provider are both finished (no second report)', async () => {
    const args = { title: 'Sibling links', body: 'two links, one report' };
    const legacy = await connectLegacy(stack, tokens.alice, {});
    try {
      // Link B for the operation; link C for another tool of the same provider.
      const b = (await expectUrlElicitation(legacy, 'reports_create', args)).elicitations[0]!;
      const c = (await expectUrlElicitation(legacy, 'reports_list', {})).elicitations[0]!;
      expect(b.elicitationId).not.toBe(c.elicitationId);

      // The user starts B (consents on our page, reaches the Report Service) but finishes C first.
      const runB = await openConnectLink(stack, b.url, 'alice');
      const atProvider = await runB.browser.submitForm(runB.review, {}, { form: '/connect/' });
      await consentAndAuthorize(stack, await openConnectLink(stack, c.url, 'alice'), 'alice');

      // B's requirement is met by C: settled in the same transaction, naming C.
      expect((await query('SELECT status FROM elicitation_navigations WHERE id = $1', [b.elicitationId]))[0]).toEqual({
        status: 'REQUIREMENT_VERIFIED',
      });
      const settled = await query(
        "SELECT from_status, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_present'",
        [b.elicitationId],
      );
      expect(settled).toEqual([
        { from_status: 'OUT_OF_BAND_PENDING', evidence: expect.objectContaining({ connectedBy: c.elicitationId }) },
      ]);

      // The host's early retry is accepted through B, with a receipt.
      const first = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(first.structuredContent).toMatchObject({ status: 'created', report: { title: args.title } });
      const reportId = (first.structuredContent as Created).report.id;

      // The user then finishes B at the Report Service: the callback finds nothing waiting and stores nothing.
      const login = atProvider.text.includes('name="password"')
        ? await runB.browser.submitForm(atProvider, { login: 'alice', password: DEV_PASSWORD })
        : atProvider;
      const late = await runB.browser.submitForm(login, {}, { form: '/confirm' });
      expect(late.status).toBe(409);
      const secretsOfB = await query('SELECT count(*)::int AS n FROM secrets WHERE navigation_id = $1', [
        b.elicitationId,
      ]);
      expect(secretsOfB[0].n).toBe(0);

      // Every later retry answers the recorded outcome.
      const again = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect((again.structuredContent as Created).report.id).toBe(reportId);

      expect((await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === args.title)).toEqual([
        expect.objectContaining({ id: reportId }),
      ]);
      expect(
        await query('SELECT navigation_id, lineage, outcome_status FROM operation_receipts WHERE navigation_id = $1', [
          b.elicitationId,
        ]),
      ).toEqual([{ navigation_id: b.elicitationId, lineage: 'error_retry', outcome_status: 'succeeded' }]);
      expect(
        (await query('SELECT status FROM elicitation_navigations WHERE id = $1', [b.elicitationId]))[0].status,
      ).toBe('RETRY_RESPONSE_ACCEPTED');
    } finally {
      await closeLegacy(legacy);
    }
  });

  it('settles, rather than performs beside, a flow still open for the operation when a connection already exists', async () => {
    const args = { title: 'Open beside a connection', body: 'raced' };
    const legacy = await connectLegacy(stack, tokens.alice, {});
    try {
      // alice is connected (previous test). B is started while she is not, and her connection comes
      // back without B being settled: the window between a callback's commit and a new flow's insert.
      await stack.db.pool.query("CREATE TABLE kept_secrets AS SELECT * FROM secrets WHERE subject_sub = 'alice'");
      await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
      const b = (await expectUrlElicitation(legacy, 'reports_create', args)).elicitations[0]!;
      await stack.db.pool.query('INSERT INTO secrets SELECT * FROM kept_secrets');
      expect(
        (await query('SELECT status FROM elicitation_navigations WHERE id = $1', [b.elicitationId]))[0].status,
      ).toBe('USER_REVIEW');

      const first = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(first.structuredContent).toMatchObject({ status: 'created' });
      const reportId = (first.structuredContent as Created).report.id;
      // B was settled and the operation accepted through it: one receipt, on B.
      expect(
        await query('SELECT navigation_id, outcome_status FROM operation_receipts WHERE navigation_id = $1', [
          b.elicitationId,
        ]),
      ).toEqual([{ navigation_id: b.elicitationId, outcome_status: 'succeeded' }]);
      expect(
        (
          await query(
            "SELECT count(*)::int AS n FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_present'",
            [b.elicitationId],
          )
        )[0].n,
      ).toBe(1);

      // The user opening B afterwards is told it is done; nothing is sent to the provider.
      const page = (await openConnectLink(stack, b.url, 'alice')).review;
      expect(page.status).toBe(200);
      expect(page.text).toContain('Nothing to do here');
      expect(
        (
          await query('SELECT count(*)::int AS n FROM oauth_transactions WHERE navigation_id = $1', [b.elicitationId])
        )[0].n,
      ).toBe(0);
      const again = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect((again.structuredContent as Created).report.id).toBe(reportId);
      expect((await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === args.title)).toHaveLength(1);
    } finally {
      await closeLegacy(legacy);
    }
  });
});

describe('the approval queue on the 2025-11-25 wire for a user who is already connected', () => {
  const { stack, tokens } = useBrokerStack(
    { legacyUrlElicitation: 'error', legacyWaitMs: 2_000, retryWaitMs: 300, highRiskTools: ['reports_create'] },
    { users: ['bob', 'ops'] },
  );

  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const connect = async (legacy: LegacyClient, login: string) => {
    const link = (await expectUrlElicitation(legacy, 'reports_list', {})).elicitations[0]!;
    await consentAndAuthorize(stack, await openConnectLink(stack, link.url, login), login);
    await until('the connection', () => (legacy.completed.length > 0 ? true : undefined));
  };
  const approvalsFor = (title: string) =>
    query(
      'SELECT a.id, a.status FROM operation_approvals a JOIN elicitation_navigations n ON n.id = a.navigation_id WHERE n.purpose LIKE $1 ORDER BY a.requested_at',
      [`%${title}%`],
    );

  it("holds a connected user's direct high-risk call, and every repeat of it, until an operator approves; then does it once", async () => {
    const args = { title: 'Connected high-risk', body: 'direct' };
    const legacy = await connectLegacy(stack, tokens.bob, {});
    try {
      await connect(legacy, 'bob');
      const held = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(held.isError).toBe(true);
      expect(JSON.stringify(held.content)).toContain("waits for an operator's approval");
      const repeated = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(repeated.isError).toBe(true);
      expect(await reportsAt(stack, 'rs-user-bob').then((r) => r.filter((x) => x.title === args.title))).toEqual([]);
      // One record, born verified (no link was presented), one pending approval, no receipt.
      const flows = await query('SELECT id, status, lineage FROM elicitation_navigations WHERE purpose LIKE $1', [
        `%${args.title}%`,
      ]);
      expect(flows).toEqual([{ id: expect.any(String), status: 'REQUIREMENT_VERIFIED', lineage: 'error_retry' }]);
      const events = await query('SELECT event FROM navigation_events WHERE navigation_id = $1 ORDER BY id', [
        flows[0].id,
      ]);
      expect(events.map((e) => e.event)).toEqual(['created', 'connection_present', 'approval_requested']);
      const approvals = await approvalsFor(args.title);
      expect(approvals).toEqual([{ id: expect.any(String), status: 'pending' }]);
      expect(
        (await query('SELECT count(*)::int AS n FROM operation_receipts WHERE navigation_id = $1', [flows[0].id]))[0].n,
      ).toBe(0);

      const ops = await operatorCli(stack);
      expect((await ops('approve', approvals[0]!.id, '--reason', 'bob asked for it')).code).toBe(0);
      const done = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(done.structuredContent).toMatchObject({ status: 'created', report: { title: args.title } });
      const again = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect((again.structuredContent as Created).report.id).toBe((done.structuredContent as Created).report.id);
      expect((await reportsAt(stack, 'rs-user-bob')).filter((r) => r.title === args.title)).toHaveLength(1);
      expect((await query('SELECT status FROM elicitation_navigations WHERE id = $1', [flows[0].id]))[0].status).toBe(
        'RETRY_RESPONSE_ACCEPTED',
      );
    } finally {
      await closeLegacy(legacy);
    }
  });

  it("never runs a connected user's high-risk call repeated after an operator rejected it", async () => {
    const args = { title: 'Rejected high-risk', body: 'no' };
    const legacy = await connectLegacy(stack, tokens.bob, {});
    try {
      const held = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(held.isError).toBe(true);
      const [approval] = await approvalsFor(args.title);
      const ops = await operatorCli(stack);
      expect((await ops('reject', approval!.id, '--reason', 'not today')).code).toBe(0);
      for (let i = 0; i < 2; i++) {
        const repeated = await legacy.client.callTool({ name: 'reports_create', arguments: args });
        expect(repeated.isError).toBe(true);
        expect(JSON.stringify(repeated.content)).toContain('rejected');
      }
      expect((await reportsAt(stack, 'rs-user-bob')).filter((r) => r.title === args.title)).toEqual([]);
      expect(
        (
          await query(
            'SELECT count(*)::int AS n FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.purpose LIKE $1',
            [`%${args.title}%`],
          )
        )[0].n,
      ).toBe(0);
    } finally {
      await closeLegacy(legacy);
    }
  });

  it("refuses an operator's approval of their own operation, and records nothing", async () => {
    const args = { title: 'Own high-risk', body: 'ops asks' };
    const legacy = await connectLegacy(stack, tokens.ops, {});
    try {
      await connect(legacy, 'ops');
      const held = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(held.isError).toBe(true);
      const [approval] = await approvalsFor(args.title);
      const ops = await operatorCli(stack, 'ops');
      const own = await ops('approve', approval!.id, '--reason', 'approving myself');
      expect(own.code).not.toBe(0);
      expect(own.output).toContain('cannot approve your own operation');
      expect(await approvalsFor(args.title)).toEqual([{ id: approval!.id, status: 'pending' }]);
      expect(
        (
          await query(
            "SELECT count(*)::int AS n FROM operator_actions WHERE action = 'approve_operation' AND details->>'approvalId' = $1",
            [approval!.id],
          )
        )[0].n,
      ).toBe(0);
      const still = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(still.isError).toBe(true);
      expect((await reportsAt(stack, 'rs-user-ops')).filter((r) => r.title === args.title)).toEqual([]);
    } finally {
      await closeLegacy(legacy);
    }
  });
});
