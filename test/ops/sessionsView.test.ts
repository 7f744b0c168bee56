import { describe, expect, it } from 'vitest';
import { createRender } from '../../src/web/render.js';

// /ops/sessions renders from a plain model, escapes what it shows (a subject is the identity
// provider's text), and uses neither inline style nor script.

const render = createRender({ cache: false });
const hostile = '<script>alert(1)</script>';
const model = {
  title: 'Browser sessions',
  brand: 'Connect Broker · Operators',
  signedInAs: 'ops',
  csrf: 'csrf-token',
  section: 'sessions',
  limit: 200,
};
const session = {
  id: 'sess_0123456789abcdef0123456789abcdef',
  subject: hostile,
  displayName: hostile,
  operator: true,
  createdAt: '2026-03-02T12:00:00.000Z',
  lastSeenAt: '2026-03-02T12:01:00.000Z',
  expiresAt: '2026-03-02T20:00:00.000Z',
};

describe('the sessions view', () => {
  it('lists sessions with a revoke form each, escaped, and a subject-wide revoke when filtered', () => {
    const html = render('ops/sessions', { ...model, subject: hostile, revoked: 2, sessions: [session] });
    expect(html).not.toContain(hostile);
    expect(html).not.toMatch(/<script\b|\sstyle=/i);
    expect(html).toContain('&lt;script&gt;');
    expect(html).toContain('2 sessions revoked');
    expect(html).toContain(`action="/ops/sessions/${session.id}/revoke"`);
    expect(html).toContain(`action="/ops/sessions/${encodeURIComponent(hostile)}/revoke"`);
    expect(html.match(/name="_csrf" value="csrf-token"/g)).toHaveLength(2);
    expect(html).toContain('<a href="/ops/sessions" aria-current="page">Sessions</a>');
  });

  it('says when there is nothing to list', () => {
    const html = render('ops/sessions', { ...model, subject: undefined, revoked: undefined, sessions: [] });
    expect(html).toContain('No live session.');
    expect(html).not.toContain('/revoke"');
  });
});
