import { INVISIBLE } from './displayText.js';
import { shippedProtectedDomains, type ProtectedDomains } from './protectedDomains.js';
import { classifyUrl } from './urlClassifier.js';
import { findCredential } from './urlCredentials.js';
import type { UrlRule } from './urlVerdict.js';

// The URL policy for every URL the broker emits or trusts: the classifier's
// judgement (src/security/urlClassifier.ts), with no fragment, as a thrown
// error naming the first rule broken.

export interface UrlPolicy {
  /** Development: http:// and IP literals are allowed for loopback hosts only. */
  allowLoopback: boolean;
  /** When set, the URL's host (with port) must be exactly this. */
  expectedHost?: string;
  /** Whether an IP-literal host is acceptable (our own origin may be one; third parties may not). */
  allowIpLiteral?: boolean;
  /** The domains lookalikes are judged against; the shipped list when not given. */
  protectedDomains?: ProtectedDomains;
}

export class UrlPolicyError extends Error {
  override name = 'UrlPolicyError';
  constructor(
    message: string,
    readonly rule: UrlRule,
  ) {
    super(message);
  }
}

/** Returns the parsed URL if it passes the policy; throws UrlPolicyError naming the first rule it breaks. */
export function checkUrl(raw: string, policy: UrlPolicy, what = 'URL'): URL {
  const verdict = classifyUrl(raw, {
    allowLoopback: policy.allowLoopback,
    ...(policy.allowIpLiteral !== undefined && { allowIpLiteral: policy.allowIpLiteral }),
    ...(policy.expectedHost !== undefined && { expectedHost: policy.expectedHost }),
    allowFragment: false,
    protectedDomains: policy.protectedDomains ?? shippedProtectedDomains(),
  });
  if (verdict.verdict === 'allow') return verdict.url;
  throw new UrlPolicyError(`${what} ${verdict.reason}: ${printableUrl(raw)}`, verdict.rule);
}

/**
 * A URL as it may be shown in a message or a log line: invisible and control
 * characters escaped, the query and fragment left out when either carries a
 * credential (or the URL does not parse), and at most 200 characters.
 */
export function printableUrl(raw: string): string {
  // A URL that does not parse cannot be searched for credentials: its query and fragment are left out.
  const secret = URL.canParse(raw) ? findCredential(new URL(raw)) !== undefined : /[?#]/.test(raw);
  const text = secret ? `${raw.replace(/[?#].*$/s, '')}?…` : raw;
  const shown = [...text]
    .map((ch) => (INVISIBLE.test(ch) || /[\p{Cc}]/u.test(ch) ? `\\u{${ch.codePointAt(0)!.toString(16)}}` : ch))
    .join('');
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}
