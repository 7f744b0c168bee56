import { describe, expect, it } from 'vitest';
import { protectedDomainsWith } from '../../src/security/protectedDomains.js';
import { classifyUrl, type UrlClassifierOptions } from '../../src/security/urlClassifier.js';
import type { UrlRule } from '../../src/security/urlVerdict.js';

// A deployment with one configured provider of its own, acmecorp.io, beside the shipped list.
const protectedDomains = protectedDomainsWith(['login.acmecorp.io']);
const thirdParty: UrlClassifierOptions = { allowLoopback: false, allowFragment: true, protectedDomains };
const judge = (raw: string, options: Partial<UrlClassifierOptions> = {}) =>
  classifyUrl(raw, { ...thirdParty, ...options });

function expectBlocked(rule: UrlRule, cases: readonly string[], options: Partial<UrlClassifierOptions> = {}) {
  for (const raw of cases) expect({ raw, rule: judge(raw, options).rule }).toEqual({ raw, rule });
}
function expectAllowed(cases: readonly (readonly [raw: string, registrableDomain: string])[]) {
  for (const [raw, registrableDomain] of cases) {
    const verdict = judge(raw);
    expect({ raw, verdict: verdict.verdict, rule: verdict.rule, registrableDomain: verdict.registrableDomain }).toEqual(
      {
        raw,
        verdict: 'allow',
        rule: null,
        registrableDomain,
      },
    );
  }
}

describe('classifyUrl', () => {
  it('allows ordinary URLs and internationalised domains that imitate nothing, in Unicode or punycode', () => {
    expectAllowed([
      ['https://github.com/octo/repo/pulls?q=is%3Aopen#issue-3', 'github.com'],
      ['https://bücher.de/katalog', 'bücher.de'],
      ['https://xn--bcher-kva.de/katalog', 'bücher.de'],
      ['https://XN--BCHER-KVA.DE/', 'bücher.de'], // mixed-case punycode: the parser lowercases it
      ['https://яндекс.рф/', 'яндекс.рф'],
      ['https://xn--d1acpjx3f.xn--p1ai/', 'яндекс.рф'],
      ['https://日本語.jp/', '日本語.jp'],
      ['https://github.com./login', 'github.com'], // a trailing dot is the same host
      ['https://github.com:443/', 'github.com'],
      ['https://github.com:8443/', 'github.com'],
      ['https://alice.github.io/blog', 'alice.github.io'], // a private suffix: the user's own site is shown
      ['https://www.google.com.au/', 'google.com.au'],
      ['https://www.amazon.co.uk/gp/cart', 'amazon.co.uk'],
      ['https://login.acmecorp.io/authorize', 'acmecorp.io'],
    ]);
  });

  it('refuses over-long URLs', () => {
    expectBlocked('too-long', [`https://example.com/${'a'.repeat(2048)}`]);
  });

  it('refuses bidi, zero-width and control characters anywhere, percent-encoded ones too', () => {
    expectBlocked('invisible-character', [
      'https://git\u200bhub.com/',
      'https://gi\u00adthub.com/', // a soft hyphen the parser would silently drop
      'https://example.com/\u202egnp.exe',
      'https://example.com/%E2%80%AEgnp.exe',
      'https://example.com/?q=%E2%80%8B',
      'https://git\nhub.com/', // the parser removes newlines and tabs
      ' https://github.com/',
    ]);
  });

  it('refuses what is not an absolute URL', () => {
    expectBlocked('not-absolute', ['/connect/abc', 'javascript:alert(1)', 'https:github.com', 'github.com']);
  });

  it('refuses ideographic and fullwidth dots and characters that read as a delimiter', () => {
    expectBlocked('label-separator', [
      'https://github\u3002com/',
      'https://github\uff0ecom/',
      'https://github\uff61com/',
      'https://github.com\u2215login.example.net/',
      'https://github.com\u2044login.example.net/',
    ]);
  });

  it('refuses a percent-encoded host', () => {
    expectBlocked('encoded-host', [
      'https://%67ithub.com/',
      'https://github%2ecom.evil.example/',
      'https://[fe80::1%25en0]/', // an IPv6 zone id (RFC 6874), which WHATWG URL does not parse either
    ]);
  });

  it('refuses what does not parse: a port that hides a host, IPv4 with five parts, broken punycode', () => {
    expectBlocked('invalid-url', [
      'https://github.com:8443.evil.example/',
      'https://1.2.3.4.5/',
      'https://xn--zz.com/',
    ]);
  });

  it('refuses user information, a port-looking one included', () => {
    expectBlocked('userinfo', [
      'https://user:pw@example.com/',
      'https://github.com@evil.example/',
      'https://github.com:443@evil.example/',
      'https://@evil.example/', // an empty one the parser drops
    ]);
  });

  it('refuses any scheme but https, and http to loopback outside development', () => {
    expectBlocked('not-https', ['http://example.com/', 'ftp://example.com/', 'http://localhost:3000/']);
    expect(judge('http://localhost:3000/cb', { allowLoopback: true }).verdict).toBe('allow');
  });

  it('refuses loopback hosts in every spelling outside development', () => {
    const loopback = [
      'https://localhost/',
      'https://app.localhost/',
      'https://127.0.0.1/',
      'https://2130706433/',
      'https://0x7f000001/',
      'https://0177.0.0.1/',
      'https://127.1/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
    ];
    expectBlocked('loopback', loopback);
    for (const raw of loopback) expect(judge(raw, { allowLoopback: true }).verdict).toBe('allow');
  });

  it('refuses IP literals for third parties in every form, and allows them where the caller does', () => {
    const literals = [
      'https://192.0.2.1/',
      'https://3221225985/', // 192.0.2.1 as one decimal number
      'https://0xc0000201/',
      'https://0300.0.02.01/',
      'https://0xc0.0.2.1/',
      'https://[2001:db8::1]/',
      'https://[::ffff:192.0.2.1]/',
    ];
    expectBlocked('ip-literal', literals);
    expectBlocked('ip-literal', literals, { allowLoopback: true });
    for (const raw of literals) expect(judge(raw, { allowIpLiteral: true }).verdict).toBe('allow');
  });

  it('refuses empty labels and punycode that encodes no Unicode label', () => {
    expectBlocked('invalid-host', ['https://github.com../', 'https://a..b.example/', 'https://xn--github-.com/']);
  });

  it('requires the configured host, port included', () => {
    expect(judge('https://github.com/x', { expectedHost: 'github.com' }).verdict).toBe('allow');
    expectBlocked('unexpected-host', ['https://github.com:8443/x', 'https://api.github.com/x'], {
      expectedHost: 'github.com',
    });
  });

  it('refuses credentials in the query or fragment, by name or by shape, never echoing them', () => {
    const cases = [
      'https://example.com/cb?access_token=canary-123',
      'https://example.com/?API_KEY=canary-123',
      'https://example.com/cb#access_token=canary-123&token_type=bearer',
      'https://example.com/#/callback?token=canary-123',
      'https://example.com/?q=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ.c2ln',
      `https://example.com/?note=ghp_${'a'.repeat(36)}`,
      'https://example.com/?next=https%3A%2F%2Fapp.example%2Fcb%3Frefresh_token%3Dcanary-123',
    ];
    expectBlocked('credential', cases);
    for (const raw of cases) {
      const verdict = judge(raw);
      expect(verdict.verdict === 'block' && verdict.reason).not.toMatch(/canary|aaaa|eyJ/);
    }
    expect(judge('https://example.com/cb?code=abc&state=xyz').verdict).toBe('allow');
  });

  it('refuses any fragment only where the caller says so', () => {
    expect(judge('https://example.com/docs#install').verdict).toBe('allow');
    expectBlocked('fragment', ['https://example.com/docs#install'], { allowFragment: false });
  });

  it('refuses hosts whose skeleton is a protected domain or its name under another suffix', () => {
    expectBlocked('confusable', [
      'https://paypa1.com/',
      'https://rnicrosoft.com/',
      'https://g00gle.com/',
      'https://gíthub.com/', // a diacritic
      'https://xn--gthub-zsa.com/', // the same in punycode
      'https://XN--GTHUB-ZSA.COM/', // mixed-case punycode
      'https://paypa1.com./', // a trailing dot
      'https://paypa1.com:443/',
      'https://github.c\u03bfm/', // a Greek omicron in the suffix
      'https://paypa1.net/', // the protected name under another suffix
      'https://acrnecorp.io/', // the configured provider's domain
      'https://gооgle.com/', // Cyrillic о in a Latin label
    ]);
    // The configured provider's lookalike is refused only where that provider is configured.
    expect(
      classifyUrl('https://acrnecorp.io/', { ...thirdParty, protectedDomains: protectedDomainsWith([]) }).verdict,
    ).toBe('allow');
  });

  it('refuses whole-script confusables, and allows the same letters under a suffix of their script', () => {
    expectBlocked('whole-script-confusable', [
      'https://аррӏе.com/',
      'https://xn--80ak6aa92e.com/',
      'https://сахар.com/', // a Russian word, every letter of which reads as Latin (caxap)
    ]);
    expectBlocked('whole-script-confusable', ['https://аррӏе.com.evil.example/']); // in a subdomain too
    // At home under a suffix in that script, or a country code whose country writes it.
    expectAllowed([
      ['https://сахар.рф/', 'сахар.рф'],
      ['https://αθήνα.gr/', 'αθήνα.gr'],
    ]);
  });

  it('refuses labels outside the Moderately Restrictive profile, and allows the mixes it permits', () => {
    expectBlocked('mixed-script', [
      'https://m\u043enkey.example/', // Latin and Cyrillic
      'https://\u03b1lpha-shop.example/', // Greek and Latin
      'https://сафари-\u10d0.example/', // Cyrillic and Georgian
    ]);
    expectAllowed([
      ['https://ソニーstore.jp/', 'ソニーstore.jp'], // Latin with Katakana (Highly Restrictive)
      ['https://東京tokyo.jp/', '東京tokyo.jp'], // Latin with Han
      ['https://서울seoul.kr/', '서울seoul.kr'], // Latin with Hangul
      ['https://shopร้าน.co.th/', 'shopร้าน.co.th'], // Latin with Thai (Moderately Restrictive)
    ]);
  });

  it('refuses a protected domain written inside another domain, and allows the owner its own', () => {
    expectBlocked('embedded-domain', [
      'https://github.com.evil.example/',
      'https://accounts.google.com.evil.example/signin',
      'https://github.com-login.example/',
      'https://amazon.co.uk.evil.example/',
      'https://paypa1.com.evil.example/', // by skeleton
      'https://github.com.github.io/', // a private suffix anyone can publish under
    ]);
    expectAllowed([
      ['https://github.com.google.com/', 'google.com'],
      ['https://google.com.mx/', 'google.com.mx'],
    ]);
  });

  it('refuses a URL with a backslash, which parsers read as "/" or as part of the user information or host', () => {
    expectBlocked('backslash', [
      'https://example.com\\@evil.example/',
      'https://evil.example\\github.com/',
      'https://evil.example/path\\more',
      'https://evil.example/?q=a\\b',
      'https:\\\\evil.example/',
    ]);
  });

  it('refuses a host the parser rewrites into another name, and allows the ones it only lowercases or encodes', () => {
    expectBlocked('parser-mismatch', [
      'https://\uFF47\uFF49\uFF54\uFF48\uFF55\uFF42.com/', // fullwidth letters: github.com to the WHATWG parser
      'https://\u{1D5C0}\u{1D5C2}\u{1D5CD}\u{1D5C1}\u{1D5CE}\u{1D5BB}.com/', // mathematical sans-serif letters
    ]);
    expectAllowed([
      ['HTTPS://GitHub.COM/Octo', 'github.com'],
      ['https://BÜCHER.de/', 'bücher.de'],
      ['https://bu\u0308cher.de/', 'bücher.de'], // decomposed: the same name in NFC
      ['https://straße.de/', 'straße.de'],
    ]);
  });
});
