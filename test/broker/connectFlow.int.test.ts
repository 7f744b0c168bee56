import { describe, expect, it } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

describe('the URL-mode connect flow over MRTR', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });

  it('connects alice through the browser and creates exactly one report', async () => {
    const args = { title: 'Quarterly TPS', body: 'All cover sheets attached.' };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const link = new URL(elicited.url);
    expect(link.origin).toBe(stack.brokerUrl);
    expect(link.pathname).toMatch(/^\/connect\/[\w-]{43}$/);
    expect(link.search).toBe('');
    expect(elicited.message).toContain('Report Service');
    expect(elicited.message).toContain('create the report \u201cQuarterly TPS\u201d');

    const run = await openConnectLink(stack, elicited.url, 'alice');
    expect(run.review.status).toBe(200);
    expect(run.review.text).toContain(`Continue to ${stack.dev.reports.issuer}`);
    const done = await consentAndAuthorize(stack, run, 'alice');
    expect(done.url).toMatch(new RegExp(`^${stack.brokerUrl}/connect/done\\?n=`));
    expect(done.text).toContain('Report Service is connected');
    expect(done.text).not.toMatch(/eyJ[\w-]+\.eyJ/);

    const accepted = await retryConnection(
      stack,
      tokens.alice,
      'reports_create',
      args,
      elicited.requestState,
      'accept',
    );
    expect(accepted.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: 'Quarterly TPS' } },
    });
    const reportId = (accepted.json.result?.['structuredContent'] as { report: { id: string } }).report.id;

    const again = await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    expect((again.json.result?.['structuredContent'] as { report: { id: string } }).report.id).toBe(reportId);

    const listed = await callTool(stack, tokens.alice, 'reports_list', {}, {}, {});
    const reports = (listed.json.result?.['structuredContent'] as { reports: { id: string; title: string }[] }).reports;
    expect(reports.filter((r) => r.title === 'Quarterly TPS')).toHaveLength(1);

    const navigation = await stack.db.pool.query('SELECT id, status, subject_sub FROM elicitation_navigations');
    expect(navigation.rows).toEqual([expect.objectContaining({ status: 'MRTR_RETRY_ACCEPTED', subject_sub: 'alice' })]);
    const id = navigation.rows[0].id;
    expect(
      (await stack.db.pool.query('SELECT count(*)::int AS n FROM consent_receipts WHERE navigation_id = $1', [id]))
        .rows[0].n,
    ).toBe(1);
    expect(
      (await stack.db.pool.query('SELECT outcome_status FROM operation_receipts WHERE navigation_id = $1', [id])).rows,
    ).toEqual([{ outcome_status: 'succeeded' }]);
    const events = await stack.db.pool.query(
      'SELECT event, to_status FROM navigation_events WHERE navigation_id = $1 ORDER BY id',
      [id],
    );
    expect(events.rows.map((e) => e.to_status)).toEqual([
      'CREATED',
      'USER_REVIEW',
      'NAVIGATION_ACCEPTED',
      'OUT_OF_BAND_PENDING',
      'COMPLETION_NOTIFIED',
      'REQUIREMENT_VERIFIED',
      'MRTR_RETRY_ACCEPTED',
    ]);
    const secrets = await stack.db.pool.query('SELECT kind FROM secrets ORDER BY kind');
    expect(secrets.rows.map((s) => s.kind)).toEqual(['access_token', 'refresh_token']);
    const connections = await stack.db.pool.query(
      'SELECT subject_sub, provider, upstream_subject, upstream_name, granted_scopes, navigation_id FROM connections',
    );
    expect(connections.rows).toEqual([
      {
        subject_sub: 'alice',
        provider: 'reports',
        upstream_subject: 'rs-user-alice',
        upstream_name: null,
        granted_scopes: ['reports:read', 'reports:write'],
        navigation_id: expect.any(String),
      },
    ]);
    expect(stack.logs.join('')).not.toMatch(/eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+/);
  });
});
