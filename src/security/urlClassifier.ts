import { domainToASCII, domainToUnicode } from 'node:url';
import { isAscii } from './confusables.js';
import { isIpLiteral, isLoopbackHost } from './ipHost.js';
import { lookalikeOf } from './lookalikes.js';
import { mixedScripts } from './mixedScript.js';
import type { ProtectedDomains } from './protectedDomains.js';
import { NO_DOMAIN, registrableDomainOf } from './registrableDomain.js';
import { findCredential } from './urlCredentials.js';
import { hasInvisible, lookalikeSeparatorIn, writtenAuthorityOf } from './urlText.js';
import type { UrlRule, UrlVerdict } from './urlVerdict.js';

// One judgement for every URL the broker emits, trusts or relays. The rules
// run in the order of URL_RULES (urlVerdict.ts); the first that fires blocks.

export interface UrlClassifierOptions {
  /** Development: http:// and IP literals are allowed for loopback hosts only. */
  allowLoopback: boolean;
  /** Whether an IP-literal host is acceptable (the broker's own origin may be one; a third party's may not). */
  allowIpLiteral?: boolean;
  /** When set, the URL's host (with port) must be exactly this. */
  expectedHost?: string;
  /** Whether the URL may have a fragment at all (the broker's own links have none); one with a credential never may. */
  allowFragment?: boolean;
  /** The domains lookalikes are judged against. */
  protectedDomains: ProtectedDomains;
}

const MAX_LENGTH = 2048;

/** Allow, or block with the first rule the URL breaks; never throws. */
export function classifyUrl(raw: string, options: UrlClassifierOptions): UrlVerdict {
  let shown: string | null = null;
  const block = (rule: UrlRule, reason: string): UrlVerdict => ({
    verdict: 'block',
    rule,
    reason,
    registrableDomain: shown,
  });

  if (raw.length > MAX_LENGTH) return block('too-long', `is longer than ${MAX_LENGTH} characters`);
  // Zero-width and bidirectional controls let a URL read differently from what it is.
  if (hasInvisible(raw)) return block('invisible-character', 'contains invisible or bidirectional characters');
  // The WHATWG parser reads "\\" as "/" (https://a.example\\@b.example/ is a.example); other parsers
  // read it as part of the user information or host (b.example). No reading of one is safe.
  if (raw.includes('\\')) return block('backslash', 'contains a backslash, which parsers read differently');
  const written = writtenAuthorityOf(raw);
  if (written === undefined) return block('not-absolute', 'is not an absolute URL');
  const separator = lookalikeSeparatorIn(written.host);
  if (separator !== undefined) {
    const code = `U+${separator.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    return block('label-separator', `has a host with ${code}, which reads as a separator but is not one`);
  }
  if (written.host.includes('%')) return block('encoded-host', 'has a percent-encoded host');
  const url = parsed(raw);
  if (url === undefined) return block('invalid-url', 'is not a valid URL');
  const asciiHost = url.hostname.replace(/\.$/, '');
  const ip = isIpLiteral(asciiHost);
  if (rewritten(raw, written.host, url, ip))
    return block('parser-mismatch', 'has a scheme or host the URL parser rewrites into another');
  const loopback = isLoopbackHost(asciiHost);
  const unicodeHost = isAscii(asciiHost) && !asciiHost.includes('xn--') ? asciiHost : domainToUnicode(asciiHost);
  const parts = ip || loopback ? NO_DOMAIN : registrableDomainOf(asciiHost, unicodeHost);
  shown = parts.domain ?? unicodeHost;

  // An empty one too (https://@host): the parser drops it, but a link with one was written to mislead.
  if (url.username || url.password || written.authority.includes('@'))
    return block('userinfo', 'carries user information');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback && options.allowLoopback))
    return block('not-https', 'must use https');
  if (loopback && !options.allowLoopback) return block('loopback', 'points at a loopback host');
  if (ip && !options.allowIpLiteral && !loopback) return block('ip-literal', 'has an IP-address host');
  const badLabel = ip ? undefined : invalidLabelIn(asciiHost, unicodeHost);
  if (badLabel !== undefined) return block('invalid-host', `has an invalid host (${badLabel})`);
  if (options.expectedHost !== undefined && url.host !== options.expectedHost)
    return block('unexpected-host', `is not on the configured host ${options.expectedHost}`);
  const credential = findCredential(url);
  if (credential) return block('credential', `carries a credential in its ${credential.where} (${credential.what})`);
  if (url.hash && !options.allowFragment) return block('fragment', 'has a fragment');
  if (ip || loopback) return allow(url, shown);

  const lookalike = lookalikeOf(unicodeHost, parts, options.protectedDomains);
  if (lookalike && lookalike.rule !== 'embedded-domain') return block(lookalike.rule, `has a host ${lookalike.reason}`);
  for (const label of isAscii(unicodeHost) ? [] : unicodeHost.split('.')) {
    const scripts = mixedScripts(label);
    if (scripts) return block('mixed-script', `has a host label that mixes scripts (${scripts.join(', ')})`);
  }
  if (lookalike) return block(lookalike.rule, `has a host ${lookalike.reason}`);
  return allow(url, shown);
}

function parsed(raw: string): URL | undefined {
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}

const allow = (url: URL, registrableDomain: string): UrlVerdict => ({
  verdict: 'allow',
  rule: null,
  registrableDomain,
  url,
});

/** An empty label, or a punycode label that is not the encoding of a Unicode label (xn--github- decodes to github). */
function invalidLabelIn(asciiHost: string, unicodeHost: string): string | undefined {
  const ascii = asciiHost.split('.');
  const unicode = unicodeHost.split('.');
  if (ascii.includes('')) return 'an empty label';
  if (!asciiHost.includes('xn--')) return undefined;
  const roundTrip = domainToASCII(unicodeHost) === asciiHost;
  for (const [i, label] of ascii.entries()) {
    if (!label.startsWith('xn--')) continue;
    const decoded = unicode[i] ?? '';
    if (!roundTrip || decoded === '' || isAscii(decoded)) return `${label} is not the punycode of a Unicode label`;
  }
  return undefined;
}

/**
 * Whether parsing changed the scheme or the host beyond case and encoding: UTS #46 maps fullwidth
 * and mathematical letters to ASCII (ｇｉｔｈｕｂ.com is github.com to the WHATWG parser, and itself
 * to others). IP literals have their own rules.
 */
function rewritten(raw: string, writtenHost: string, url: URL, ip: boolean): boolean {
  if (raw.slice(0, raw.indexOf(':')).toLowerCase() !== url.protocol.slice(0, -1)) return true;
  if (ip || writtenHost.toLowerCase() === url.hostname) return false;
  return isAscii(writtenHost) || domainToUnicode(url.hostname) !== writtenHost.normalize('NFC').toLowerCase();
}
