import { describe, expect, it } from 'vitest';
import { checkUrl, UrlPolicyError } from '../../src/security/urlPolicy.js';

const prod = { allowLoopback: false };
const dev = { allowLoopback: true };

describe('checkUrl', () => {
  it('accepts a plain https URL and returns it parsed', () => {
    expect(checkUrl('https://reports.example.com/oauth/authorize?client_id=x&state=y', prod).host).toBe(
      'reports.example.com',
    );
  });

  it('accepts an internationalised domain that imitates nothing, in Unicode or punycode', () => {
    expect(checkUrl('https://bücher.de/katalog', prod).hostname).toBe('xn--bcher-kva.de');
    expect(checkUrl('https://xn--bcher-kva.de/katalog', prod).hostname).toBe('xn--bcher-kva.de');
    expect(checkUrl('https://яндекс.рф/', prod).hostname).toBe('xn--d1acpjx3f.xn--p1ai');
  });

  it('accepts loopback http and IP literals only in development', () => {
    expect(checkUrl('https://127.0.0.1:8445/auth', dev).port).toBe('8445');
    expect(checkUrl('http://localhost:3000/cb', dev).protocol).toBe('http:');
    expect(() => checkUrl('https://127.0.0.1:8445/auth', prod)).toThrow(/loopback/);
  });

  it.each([
    ['plain http', 'http://reports.example.com/', /must use https/],
    ['a lookalike Unicode host (Cyrillic о)', 'https://rep\u043erts.example.com/', /mixes scripts \(Cyrillic, Latin\)/],
    [
      'a punycode host that decodes to mixed scripts',
      'https://xn--rports-9we.example.com/',
      /mixes scripts \(Greek, Latin\)/,
    ],
    ['user information', 'https://user:pw@reports.example.com/', /user information/],
    [
      'a token in the query',
      'https://reports.example.com/cb?access_token=abc',
      /credential in its query \(access_token\)/,
    ],
    ['an api key in the query', 'https://reports.example.com/?API_KEY=abc', /credential/],
    ['a zero-width space', 'https://reports.example.com\u200b/x', /invisible/],
    ['a bidi override', 'https://reports.example.com/\u202egnp.exe', /invisible/],
    ['an IP-address host for a third party', 'https://93.184.216.34/', /IP-address host/],
    ['a relative URL', '/connect/abc', /not an absolute URL/],
    ['javascript:', 'javascript:alert(1)', /not an absolute URL/],
    ['a fragment', 'https://reports.example.com/#token', /fragment/],
  ])('refuses %s', (_name, raw, message) => {
    expect(() => checkUrl(raw, prod)).toThrow(UrlPolicyError);
    expect(() => checkUrl(raw, prod)).toThrow(message);
  });

  it('requires the exact configured host, port included', () => {
    expect(
      checkUrl('https://reports.example.com/token', { ...prod, expectedHost: 'reports.example.com' }).pathname,
    ).toBe('/token');
    expect(() =>
      checkUrl('https://reports.example.com.evil.net/token', { ...prod, expectedHost: 'reports.example.com' }),
    ).toThrow(/configured host/);
    expect(() => checkUrl('https://127.0.0.1:9999/token', { ...dev, expectedHost: '127.0.0.1:8445' })).toThrow(
      /configured host/,
    );
  });

  it('leaves the query and fragment out of its message when they carry a credential', () => {
    expect(() => checkUrl('https://reports.example.com/cb?access_token=canary-51c2&x=1', prod)).toThrow(
      'URL carries a credential in its query (access_token): https://reports.example.com/cb?…',
    );
    expect(() => checkUrl('https://reports.example.com/cb#id_token=canary-51c2', prod)).not.toThrow(/canary/);
  });

  it('shows invisible characters escaped in its message, never raw', () => {
    try {
      checkUrl('https://a.example\u202e.com', prod);
    } catch (err) {
      expect((err as Error).message).toContain('\\u{202e}');
      expect((err as Error).message).not.toContain('\u202e');
    }
    expect.assertions(2);
  });
});
