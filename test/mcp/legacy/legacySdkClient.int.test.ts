import { UrlElicitationRequiredError } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { consentAndAuthorize, openConnectLink } from '../../support/connectFlow.js';
import { reportsAt } from '../../support/forgedTokens.js';
import {
  closeLegacy as close,
  connectLegacy,
  internalErrors,
  LEGACY,
  until,
  type Created,
} from '../../support/legacySdkClient.js';
import { operatorCli } from '../../support/operatorCli.js';
import { toolCalls } from '../../support/sdkClient.js';
import type { BrowserResponse } from '../../support/testBrowser.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

// The official SDK client at 2025-11-25 (test/support/legacySdkClient.ts) against the legacy adapter.

const WORKSPACE = 'file:///work/notes/alice';
const Q2 = { id: 'note_a1ce00000002', title: 'TPS report (Q2)' };
const LUNCH = { id: 'note_a1ce00000004', title: 'Lunch ideas' };
const DRAFT = { id: 'note_a1ce00000003', title: 'TPS report draft' };

describe('the official SDK client at 2025-11-25, nested lineage', () => {
  const { stack, tokens } = useBrokerStack({ legacyWaitMs: 15_000 }, { users: ['alice'] });

  afterEach(async () => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
    await stack.db.pool.query('DELETE FROM secrets');
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const noteExists = async (id: string) => (await query('SELECT 1 FROM notes WHERE id = $1', [id])).length === 1;
  const nonceOutcomes = async () =>
    (await query("SELECT outcome FROM mrtr_nonces WHERE principal_sub = 'alice' ORDER BY claimed_at")).map(
      (r) => r.outcome as string,
    );

  it('negotiates 2025-11-25 through initialize and keeps the session on every request', async () => {
    const legacy = await connectLegacy(stack, tokens.alice, {});
    try {
      expect(legacy.client.getNegotiatedProtocolVersion()).toBe(LEGACY);
      expect(legacy.client.getServerVersion()).toMatchObject({ name: 'connect-broker' });
      const { tools } = await legacy.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        'github_create_issue',
        'github_list_issues',
        'notes_create',
        'notes_delete',
        'notes_list',
        'notes_workspaces',
        'reports_create',
        'reports_list',
      ]);
      const [init, ...rest] = legacy.sent.filter((s) => s.method === 'POST');
      expect(init?.body).toMatchObject({
        method: 'initialize',
        params: { protocolVersion: LEGACY, capabilities: { elicitation: { form: {}, url: {} } } },
      });
      expect(init?.body?.['params']).not.toHaveProperty('_meta');
      expect(legacy.transport.sessionId).toMatch(/^[\x21-\x7e]{32,}$/);
      for (const s of rest) {
        expect(s.sessionId).toBe(legacy.transport.sessionId);
        expect(s.protocolVersion).toBe(LEGACY);
      }
      // The standalone GET stream the SDK opens after notifications/initialized.
      const get = await until('the GET stream', () => legacy.sent.find((s) => s.method === 'GET'));
      expect(get.status).toBe(200);
      expect(legacy.errors).toEqual([]);
    } finally {
      await close(legacy);
    }
  });

  it('creates exactly one report through the nested URL elicitation: accept, browser, complete notification, original answer', async () => {
    const args = { title: 'Legacy nested TPS', body: 'Cover sheet attached.' };
    let browser: Promise<BrowserResponse> | undefined;
    const legacy = await connectLegacy(stack, tokens.alice, {
      url: (params) => {
        // The host consents and opens the link; the user completes it in the browser meanwhile.
        browser = openConnectLink(stack, params.url, 'alice').then((run) => consentAndAuthorize(stack, run, 'alice'));
        return { action: 'accept' };
      },
    });
    try {
      const result = await legacy.client.callTool({ name: 'reports_create', arguments: args });

      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ status: 'created', report: { title: args.title } });
      const reportId = (result.structuredContent as Created).report.id;
      const done = await browser!;
      expect(done.url).toMatch(new RegExp(`^${stack.brokerUrl}/connect/done\\?n=`));

      expect(legacy.urlAsks).toHaveLength(1);
      const ask = legacy.urlAsks[0]!;
      expect(ask).toMatchObject({
        mode: 'url',
        elicitationId: expect.any(String),
        message: expect.stringContaining('Report Service'),
      });
      expect(new URL(ask.url).origin).toBe(stack.brokerUrl);
      expect(legacy.completed).toEqual([ask.elicitationId]);

      // One tools/call on the wire: the host did not retry.
      const calls = toolCalls(legacy.sent);
      expect(calls).toHaveLength(1);
      const callId = calls[0]!.body!['id'];

      const [navigation] = await query('SELECT status, lineage FROM elicitation_navigations WHERE id = $1', [
        ask.elicitationId,
      ]);
      expect(navigation).toEqual({ status: 'ORIGINAL_RESPONSE_ACCEPTED', lineage: 'nested' });
      const receipts = await query(
        'SELECT lineage, jsonrpc_id, retry_generation, outcome_status FROM operation_receipts WHERE navigation_id = $1',
        [ask.elicitationId],
      );
      expect(receipts).toEqual([
        { lineage: 'nested', jsonrpc_id: String(callId), retry_generation: null, outcome_status: 'succeeded' },
      ]);
      expect((await query('SELECT count(*)::int AS n FROM operation_receipts'))[0].n).toBe(1);
      const events = await query('SELECT to_status FROM navigation_events WHERE navigation_id = $1 ORDER BY id', [
        ask.elicitationId,
      ]);
      expect(events.map((e) => e.to_status)).toEqual(
        expect.arrayContaining(['REQUIREMENT_VERIFIED', 'NESTED_SERVER_CONTINUES', 'ORIGINAL_RESPONSE_ACCEPTED']),
      );
      expect(events.at(-1)?.to_status).toBe('ORIGINAL_RESPONSE_ACCEPTED');

      const reports = (await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === args.title);
      expect(reports).toEqual([expect.objectContaining({ id: reportId })]);
      expect(legacy.errors).toEqual([]);
    } finally {
      await close(legacy);
    }
  });

  it('deletes a note the user confirmed in the nested form elicitation', async () => {
    const legacy = await connectLegacy(stack, tokens.alice, {
      form: (params) => {
        const noteId = (params.requestedSchema.properties['note_id'] as { enum?: string[] }).enum?.[0] ?? '';
        return { action: 'accept', content: { note_id: noteId, confirm: true } };
      },
    });
    try {
      const before = await nonceOutcomes();
      const result = await legacy.client.callTool({
        name: 'notes_delete',
        arguments: { workspaceUri: WORKSPACE, title: Q2.title },
      });

      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ status: 'deleted', note: { id: Q2.id, title: Q2.title } });
      expect(legacy.formAsks).toHaveLength(1);
      expect(legacy.formAsks[0]?.requestedSchema.properties['note_id']).toMatchObject({
        type: 'string',
        enum: [Q2.id],
      });
      expect(toolCalls(legacy.sent)).toHaveLength(1);
      expect(await noteExists(Q2.id)).toBe(false);
      expect(await nonceOutcomes()).toEqual([...before, 'deleted']);
      expect(legacy.errors).toEqual([]);
    } finally {
      await close(legacy);
    }
  });

  it('leaves the note in place when the user declines the nested form', async () => {
    const legacy = await connectLegacy(stack, tokens.alice, { form: () => ({ action: 'decline' }) });
    try {
      const before = await nonceOutcomes();
      const result = await legacy.client.callTool({
        name: 'notes_delete',
        arguments: { workspaceUri: WORKSPACE, title: LUNCH.title },
      });

      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toEqual({ status: 'declined' });
      expect(legacy.formAsks).toHaveLength(1);
      expect(await noteExists(LUNCH.id)).toBe(true);
      expect(await nonceOutcomes()).toEqual([...before, 'declined']);
    } finally {
      await close(legacy);
    }
  });

  it('leaves the note in place and claims no nonce when the user cancels the nested form', async () => {
    const legacy = await connectLegacy(stack, tokens.alice, { form: () => ({ action: 'cancel' }) });
    try {
      const before = await nonceOutcomes();
      const result = await legacy.client.callTool({
        name: 'notes_delete',
        arguments: { workspaceUri: WORKSPACE, title: DRAFT.title },
      });

      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toEqual({ status: 'cancelled' });
      expect(legacy.formAsks).toHaveLength(1);
      expect(await noteExists(DRAFT.id)).toBe(true);
      expect(await nonceOutcomes()).toEqual(before);
    } finally {
      await close(legacy);
    }
  });
});

describe('the official SDK client at 2025-11-25, -32042 lineage', () => {
  const { stack, tokens } = useBrokerStack(
    { legacyUrlElicitation: 'error', legacyWaitMs: 2_000 },
    { users: ['alice'] },
  );

  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;

  it('surfaces -32042 as UrlElicitationRequiredError, then accepts one retry after the browser completes and answers a second from the record', async () => {
    const args = { title: 'Legacy -32042 TPS', body: 'Retried once.' };
    const legacy = await connectLegacy(stack, tokens.alice, {});
    try {
      const failure = await legacy.client.callTool({ name: 'reports_create', arguments: args }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failure).toBeInstanceOf(UrlElicitationRequiredError);
      const [elicitation, ...others] = (failure as UrlElicitationRequiredError).elicitations;
      expect(others).toEqual([]);
      expect(elicitation).toMatchObject({
        mode: 'url',
        elicitationId: expect.any(String),
        url: expect.stringMatching(/^https:/),
        message: expect.stringContaining('Report Service'),
      });
      const { elicitationId, url } = elicitation!;
      expect(new URL(url).origin).toBe(stack.brokerUrl);
      expect(legacy.urlAsks).toEqual([]);
      expect(
        (await query('SELECT status, lineage FROM elicitation_navigations WHERE id = $1', [elicitationId]))[0],
      ).toEqual({ status: 'USER_REVIEW', lineage: 'error_retry' });

      // The host treats the error as the elicitation: the user completes it in the browser.
      const done = await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice'), 'alice');
      expect(done.url).toMatch(new RegExp(`^${stack.brokerUrl}/connect/done\\?n=`));
      // The completion arrives on the session's GET stream (no request is in flight).
      await until('notifications/elicitation/complete', () => (legacy.completed.length > 0 ? true : undefined));
      expect(legacy.completed).toEqual([elicitationId]);

      const retried = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(retried.isError ?? false).toBe(false);
      expect(retried.structuredContent).toMatchObject({ status: 'created', report: { title: args.title } });
      const reportId = (retried.structuredContent as Created).report.id;

      const again = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect((again.structuredContent as Created).report.id).toBe(reportId);

      const ids = toolCalls(legacy.sent).map((s) => s.body!['id']);
      expect(ids).toHaveLength(3);
      expect(new Set(ids).size).toBe(3);
      expect((await query('SELECT status FROM elicitation_navigations WHERE id = $1', [elicitationId]))[0].status).toBe(
        'RETRY_RESPONSE_ACCEPTED',
      );
      const receipts = await query(
        'SELECT lineage, jsonrpc_id, retry_generation, outcome_status FROM operation_receipts',
      );
      expect(receipts).toEqual([
        { lineage: 'error_retry', jsonrpc_id: null, retry_generation: expect.any(Number), outcome_status: 'succeeded' },
      ]);
      expect((await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === args.title)).toEqual([
        expect.objectContaining({ id: reportId }),
      ]);
      // Still exactly one completion notification.
      expect(legacy.completed).toEqual([elicitationId]);
      expect(legacy.errors).toEqual([]);
    } finally {
      await close(legacy);
    }
  });
});

describe('the official SDK client at 2025-11-25, -32042 lineage, link re-issued by an operator', () => {
  const { stack, tokens } = useBrokerStack(
    { legacyUrlElicitation: 'error', legacyWaitMs: 2_000, retryWaitMs: 300 },
    { users: ['bob'] },
  );

  it('accepts the identical retry once through the re-issued flow, in the same lineage', async () => {
    const args = { title: 'Legacy re-issued', body: 'lost link' };
    const legacy = await connectLegacy(stack, tokens.bob, {});
    try {
      const failure = (await legacy.client
        .callTool({ name: 'reports_create', arguments: args })
        .catch((err: unknown) => err)) as UrlElicitationRequiredError;
      const { elicitationId } = failure.elicitations[0]!;
      // bob never opened it; the flow is stuck past its expiry and the operator re-issues it.
      await stack.db.pool.query(
        "UPDATE elicitation_navigations SET expires_at = created_at + interval '1 millisecond' WHERE id = $1",
        [elicitationId],
      );
      const ops = await operatorCli(stack);
      const reissued = await ops('reissue', elicitationId, '--reason', 'bob lost the link', '--json');
      expect(reissued.code).toBe(0);
      const { id: freshId, connectUrl } = JSON.parse(reissued.output.trim().split('\n').at(-1)!) as {
        id: string;
        connectUrl: string;
      };
      expect(
        (
          await stack.db.pool.query('SELECT lineage, reissued_from FROM elicitation_navigations WHERE id = $1', [
            freshId,
          ])
        ).rows,
      ).toEqual([{ lineage: 'error_retry', reissued_from: elicitationId }]);
      await consentAndAuthorize(stack, await openConnectLink(stack, connectUrl, 'bob'), 'bob');

      const retried = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(retried.structuredContent).toMatchObject({ status: 'created', report: { title: args.title } });
      const again = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect((again.structuredContent as Created).report.id).toBe((retried.structuredContent as Created).report.id);
      expect((await reportsAt(stack, 'rs-user-bob')).filter((r) => r.title === args.title)).toHaveLength(1);
      const flows = await stack.db.pool.query('SELECT id, status FROM elicitation_navigations ORDER BY created_at');
      expect(flows.rows).toEqual([
        { id: elicitationId, status: 'EXPIRED' },
        { id: freshId, status: 'RETRY_RESPONSE_ACCEPTED' },
      ]);
    } finally {
      await close(legacy);
    }
  });
});

describe('the official SDK client at 2025-11-25, -32042 lineage, high-risk tool (approval queue)', () => {
  const { stack, tokens } = useBrokerStack(
    { legacyUrlElicitation: 'error', legacyWaitMs: 2_000, retryWaitMs: 300, highRiskTools: ['reports_create'] },
    { users: ['alice'] },
  );

  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });

  it('answers the retry with a clear pending error until an operator approves, then does it once', async () => {
    const args = { title: 'Legacy high-risk', body: 'needs approval' };
    const legacy = await connectLegacy(stack, tokens.alice, {});
    try {
      const failure = (await legacy.client
        .callTool({ name: 'reports_create', arguments: args })
        .catch((err: unknown) => err)) as UrlElicitationRequiredError;
      expect(failure).toBeInstanceOf(UrlElicitationRequiredError);
      const { elicitationId, url } = failure.elicitations[0]!;
      await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice'), 'alice');
      await until('notifications/elicitation/complete', () => (legacy.completed.length > 0 ? true : undefined));

      const held = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(held.isError).toBe(true);
      expect(JSON.stringify(held.content)).toContain("waits for an operator's approval");
      const approval = (
        await stack.db.pool.query<{ id: string; status: string }>(
          'SELECT id, status FROM operation_approvals WHERE navigation_id = $1',
          [elicitationId],
        )
      ).rows;
      expect(approval).toEqual([{ id: expect.any(String), status: 'pending' }]);
      expect((await stack.db.pool.query('SELECT count(*)::int AS n FROM operation_receipts')).rows[0].n).toBe(0);

      const ops = await operatorCli(stack);
      expect((await ops('approve', approval[0]!.id, '--reason', 'alice confirmed')).code).toBe(0);
      const done = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(done.isError ?? false).toBe(false);
      expect(done.structuredContent).toMatchObject({ status: 'created', report: { title: args.title } });
      const again = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect((again.structuredContent as Created).report.id).toBe((done.structuredContent as Created).report.id);
      expect((await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === args.title)).toHaveLength(1);
      expect(
        (await stack.db.pool.query('SELECT status FROM elicitation_navigations WHERE id = $1', [elicitationId])).rows[0]
          .status,
      ).toBe('RETRY_RESPONSE_ACCEPTED');
    } finally {
      await close(legacy);
    }
  });
});
