import { isIP } from 'node:net';
import { INVISIBLE } from './displayText.js';

// One policy for every URL the broker emits or trusts:
// https (http only for loopback in development), no userinfo, an ASCII host
// that is not punycode, no IP literal for a third party, the exact host that
// was configured, nothing secret in the query, no invisible or bidi characters.

export interface UrlPolicy {
  /** Development: http:// and IP literals are allowed for loopback hosts only. */
  allowLoopback: boolean;
  /** When set, the URL's host (with port) must be exactly this. */
  expectedHost?: string;
  /** Whether an IP-literal host is acceptable (our own origin may be one; third parties may not). */
  allowIpLiteral?: boolean;
}

export class UrlPolicyError extends Error {
  override name = 'UrlPolicyError';
}

// Query parameter names that would put a credential in a URL (logs, history, Referer).
const SECRET_PARAMS =
  /^(access_?token|refresh_?token|id_?token|token|client_?secret|secret|password|passwd|api_?key|apikey|key|code_verifier|assertion|session|sig|signature)$/i;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Returns the parsed URL if it passes the policy; throws UrlPolicyError naming the first rule it breaks. */
export function checkUrl(raw: string, policy: UrlPolicy, what = 'URL'): URL {
  const fail = (why: string): never => {
    throw new UrlPolicyError(`${what} ${why}: ${printable(raw)}`);
  };
  if (raw.length > 2048) fail('is longer than 2048 characters');
  // Zero-width and bidirectional controls let a URL read differently from what it is.
  if (INVISIBLE.test(raw)) fail('contains invisible or bidirectional characters');
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(raw)?.[1];
  if (authority === undefined) fail('is not an absolute URL');
  // Checked on the raw text: the URL parser would silently turn a Unicode host into punycode.
  if ([...(authority ?? '')].some((ch) => ch.charCodeAt(0) > 0x7e)) fail('has a non-ASCII host');
  if (!URL.canParse(raw)) fail('is not a valid URL');
  const url = new URL(raw);
  const loopback = LOOPBACK_HOSTS.has(url.hostname) || url.hostname.startsWith('127.');
  if (url.username || url.password) fail('carries user information');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback && policy.allowLoopback))
    fail('must use https');
  if (loopback && !policy.allowLoopback) fail('points at a loopback host');
  if (url.hostname.split('.').some((label) => label.toLowerCase().startsWith('xn--')))
    fail('has a punycode (IDN) host');
  const ipLiteral = isIP(url.hostname.replace(/^\[|\]$/g, '')) !== 0;
  if (ipLiteral && !policy.allowIpLiteral && !(loopback && policy.allowLoopback)) fail('has an IP-address host');
  if (policy.expectedHost !== undefined && url.host !== policy.expectedHost)
    fail(`is not on the configured host ${policy.expectedHost}`);
  for (const name of url.searchParams.keys()) {
    if (SECRET_PARAMS.test(name)) fail(`carries a credential in its query (${name})`);
  }
  if (url.hash) fail('has a fragment');
  return url;
}

function printable(raw: string): string {
  const shown = [...raw]
    .map((ch) => (INVISIBLE.test(ch) || ch.charCodeAt(0) < 0x20 ? `\\u{${ch.codePointAt(0)!.toString(16)}}` : ch))
    .join('');
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}
