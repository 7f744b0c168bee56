import { describe, expect, it } from 'vitest';
import { navigationStates } from '../../src/flow/navigationStates.js';
import { columnChart, rowChart } from '../../src/ops/charts.js';
import { flowActions, NOTICES } from '../../src/ops/flowActions.js';
import { createRender } from '../../src/web/render.js';

// The operator views render from plain models, escape what they show, and
// use neither inline style nor script (the CSP allows neither).

const render = createRender({ cache: false });
const page = {
  title: 'T',
  brand: 'Connect Broker · Operators',
  signedInAs: 'Ops <Example>',
  csrf: 'csrf-token',
  section: 'flows',
};
const hostile = '<script>alert(1)</script>';
const flow = {
  id: '0b5e7c3a-8c1e-4d5e-9f0a-1b2c3d4e5f60',
  status: 'OUT_OF_BAND_PENDING',
  lineage: 'mrtr',
  subject: hostile,
  provider: 'reports',
  tool: 'reports_create',
  createdAt: '2026-03-02T12:00:00.000Z',
  updatedAt: '2026-03-02T12:01:00.000Z',
  expiresAt: '2026-03-02T12:15:00.000Z',
};

function expectSafe(html: string) {
  expect(html).not.toContain(hostile);
  expect(html).not.toMatch(/<script\b/i);
  expect(html).not.toMatch(/\sstyle=/i);
}

describe('operator views', () => {
  it('draws the dashboard: gates, three SVG charts, the kill-switch banner when paused', () => {
    const html = render('ops/dashboard', {
      ...page,
      section: 'dashboard',
      paused: { reason: hostile },
      gates: [
        { id: 'cross_user_bindings', gate: 'cross-user bindings', figure: '1', target: '0', verdict: 'MISS' },
        {
          id: 'expired_recoverable',
          gate: 'expired flows recoverable',
          figure: 'none yet',
          target: '100%',
          verdict: 'NO DATA',
        },
      ],
      totalFlows: 3,
      stuck: '0',
      pendingApprovals: '100+',
      webhookEvents: { dead: 2, pending: 5 },
      byState: rowChart(navigationStates.map((s, i) => ({ label: s, value: i, tone: 'open' }))),
      latency: columnChart([{ label: '≤1 s', value: 2 }]),
      latencySample: 2,
      latencyWindow: 5000,
      perDay: columnChart([{ label: '03-02', value: 3 }]),
      days: 30,
      // No upstream MCP server configured: the section is left out.
      upstreams: [],
    });
    expectSafe(html);
    expect(html.match(/<svg\b/g)).toHaveLength(3);
    expect(html).toContain('New connections are paused');
    expect(html).toContain('&lt;script&gt;');
    expect(html).toContain('<span class="verdict miss">MISS</span>');
    expect(html).toContain('<span class="verdict nodata">NO DATA</span>');
    expect(html).toContain('action="/ops/connections/resume"');
    expect(html).toContain('<strong>2</strong> webhook events given up, <strong>5</strong> waiting to be sent');
    expect(html).toContain('Signed in as <strong>Ops &lt;Example&gt;</strong>');
  });

  it('says webhooks are not configured instead of counting events nobody will send', () => {
    const html = render('ops/dashboard', {
      ...page,
      section: 'dashboard',
      paused: undefined,
      gates: [],
      totalFlows: 0,
      stuck: '0',
      pendingApprovals: '0',
      webhookEvents: undefined,
      byState: rowChart([]),
      latency: columnChart([]),
      latencySample: 0,
      latencyWindow: 5000,
      perDay: columnChart([]),
      days: 30,
      upstreams: [],
    });
    expect(html).toContain('Webhooks are not configured (<code>WEBHOOK_URL</code>): no event is sent');
    expect(html).not.toContain('waiting to be sent');
  });

  it('lists flows with the filters kept in the form', () => {
    const html = render('ops/flows', {
      ...page,
      flows: [flow],
      filters: { state: 'EXPIRED', lineage: 'nested', subject: hostile, limit: 50 },
      states: navigationStates,
      lineages: ['mrtr', 'nested', 'error_retry'],
    });
    expectSafe(html);
    expect(html).toContain('<option value="EXPIRED" selected>');
    expect(html).toContain('<option value="nested" selected>');
    expect(html).toContain(`href="/ops/flows/${flow.id}"`);
  });

  it('shows a flow, its events with escaped evidence, and only the actions that apply', () => {
    const can = flowActions(
      { status: flow.status, expiresAt: new Date(flow.expiresAt), receipt: undefined, reissuedAs: undefined },
      new Date('2026-03-02T12:05:00Z'),
    );
    const html = render('ops/flow', {
      ...page,
      notice: NOTICES.closed,
      flow: { ...flow, purpose: 'create the report', targetHost: 'reports.test', retryGeneration: 0 },
      events: [
        {
          at: flow.createdAt,
          from: 'CREATED',
          to: 'CREATED',
          event: 'created',
          actor: 'mcp:alice',
          moved: false,
          evidence: JSON.stringify({ note: hostile }),
        },
      ],
      consent: undefined,
      receipt: undefined,
      approval: { id: 'a1', status: 'pending', requestedAt: flow.createdAt },
      reissuedAs: undefined,
      reissuedFrom: undefined,
      can,
    });
    expectSafe(html);
    expect(can).toEqual({ close: true, reissue: false, redrive: false });
    expect(html).toContain(`action="/ops/flows/${flow.id}/close"`);
    expect(html).not.toContain('/reissue"');
    expect(html).not.toContain('/redrive"');
    expect(html).toContain('action="/ops/approvals/a1/approve"');
    expect(html.match(/name="_csrf" value="csrf-token"/g)).toHaveLength(3);
  });
});
