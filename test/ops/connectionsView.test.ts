import { describe, expect, it } from 'vitest';
import { createRender } from '../../src/web/render.js';

// /ops/connections renders from a plain model and escapes what it shows (an account name is the
// provider's text, a subject the identity provider's), with neither inline style nor script.

const render = createRender({ cache: false });
const hostile = '<script>alert(1)</script>';
const model = {
  title: 'Connections',
  brand: 'Connect Broker · Operators',
  signedInAs: 'ops',
  csrf: 'csrf-token',
  section: 'connections',
  limit: 200,
  states: ['active', 'refreshing', 'needs_reauth', 'revoked'],
};
const connection = (id: string, state: string) => ({
  id,
  subject: hostile,
  provider: 'Report Service',
  account: hostile,
  state,
  scopes: 'openid reports:read',
  connectedAt: '2026-03-02T12:00:00.000Z',
  lastUsedAt: undefined,
});

describe('the connections views', () => {
  it('lists connections escaped, with a revoke form for each one not yet revoked, and keeps the filters', () => {
    const live = '3f2a1b4c-0000-4000-8000-000000000001';
    const gone = '3f2a1b4c-0000-4000-8000-000000000002';
    const html = render('ops/connections', {
      ...model,
      filters: { subject: hostile, state: 'active' },
      connections: [connection(live, 'active'), connection(gone, 'revoked')],
    });
    expect(html).not.toContain(hostile);
    expect(html).not.toMatch(/<script\b|\sstyle=/i);
    expect(html).toContain('&lt;script&gt;');
    expect(html).toContain(`action="/ops/connections/${live}/revoke"`);
    expect(html).not.toContain(`action="/ops/connections/${gone}/revoke"`);
    expect(html.match(/name="_csrf" value="csrf-token"/g)).toHaveLength(1);
    expect(html).toContain('<option selected>active</option>');
    expect(html).toContain('<td>never</td>');
    expect(html).toContain('<a href="/ops/connections" aria-current="page">Connections</a>');
  });

  it('says when nothing matches', () => {
    expect(render('ops/connections', { ...model, filters: {}, connections: [] })).toContain('No connection matches.');
  });

  it('tells the operator to act at the provider when it did not revoke the grant', () => {
    const base = { ...model, title: 'Connection revoked', provider: hostile, summary: 'Connection x is revoked.' };
    const failed = render('ops/connectionRevoked', { ...base, revokedAtProvider: false });
    expect(failed).not.toContain(hostile);
    expect(failed).toContain('Not revoked at &lt;script&gt;');
    expect(render('ops/connectionRevoked', { ...base, revokedAtProvider: true })).not.toContain('Not revoked at');
  });
});
