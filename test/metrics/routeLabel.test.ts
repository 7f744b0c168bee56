import { describe, expect, it } from 'vitest';
import { methodLabel, routeLabel } from '../../src/metrics/routeLabel.js';

describe('routeLabel', () => {
  it.each([
    ['/mcp', '/mcp'],
    ['/', '/'],
    ['/login', '/login'],
    ['/logout', '/logout'],
    ['/auth/callback', '/auth/callback'],
    ['/oauth/callback/reports', '/oauth/callback/:provider'],
    ['/connect/done', '/connect/done'],
    ['/connect/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcd', '/connect/:handle'],
    ['/connect/anything-else', '/connect/:handle'],
    ['/healthz', '/healthz'],
    ['/readyz', '/readyz'],
    ['/metrics', '/metrics'],
    ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource'],
    ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'],
    ['/static', '/static'],
    ['/static/app.css', '/static'],
    ['/ops', '/ops'],
    ['/ops/flows/123e4567-e89b-12d3-a456-426614174000', '/ops'],
  ])('%s → %s', (path, label) => {
    expect(routeLabel(path)).toBe(label);
  });

  it.each([
    '/oauth/callback',
    '/oauth/callback/',
    '/oauth/callback/a/b',
    '/connect/',
    '/connect/a/b',
    '/connectx',
    '/opsx',
    '/staticfoo',
    '/mcp/extra',
    '/wp-admin.php',
    '/login/',
    '/%2e%2e/etc/passwd',
    '',
  ])('puts %j in "other": unknown paths never become labels', (path) => {
    expect(routeLabel(path)).toBe('other');
  });

  it('names the MCP endpoint by its configured path', () => {
    expect(routeLabel('/broker/mcp', '/broker/mcp')).toBe('/mcp');
    expect(routeLabel('/mcp', '/broker/mcp')).toBe('other');
  });

  it('keeps methods to the standard set', () => {
    expect(methodLabel('GET')).toBe('GET');
    expect(methodLabel('DELETE')).toBe('DELETE');
    expect(methodLabel('PROPFIND')).toBe('other');
    expect(methodLabel('get')).toBe('other');
    expect(methodLabel(undefined)).toBe('other');
  });
});
