import { domainToUnicode } from 'node:url';
import { parse } from 'tldts';

// Registrable domains from the Public Suffix List as tldts ships it, private
// suffixes included: the user is shown alice.github.io, not github.io, since
// anyone can publish under github.io.
const OPTIONS = {
  allowPrivateDomains: true,
  detectIp: false,
  extractHostname: false,
  mixedInputs: false,
  validateHostname: false,
} as const;

export interface DomainParts {
  /** The registrable domain in Unicode (bücher.de), or undefined for a public suffix or a single label. */
  domain: string | undefined;
  /** Its first label (bücher), the part a brand is spelled in. */
  label: string | undefined;
  /** The public suffix (de, co.uk, github.io), in Unicode; undefined with the domain. */
  suffix: string | undefined;
}

export const NO_DOMAIN: DomainParts = { domain: undefined, label: undefined, suffix: undefined };

/**
 * The registrable domain of a hostname without a trailing dot, given in both
 * forms (ASCII for the list, Unicode for what is shown), in Unicode.
 */
export function registrableDomainOf(asciiHost: string, unicodeHost = domainToUnicode(asciiHost)): DomainParts {
  const parts = parse(asciiHost, OPTIONS);
  if (parts.domain === null || parts.domainWithoutSuffix === null || parts.publicSuffix === null) return NO_DOMAIN;
  // The same labels in Unicode: IDNA maps label to label, so the counts carry over.
  const labels = unicodeHost.split('.');
  const last = (ascii: string) => labels.slice(labels.length - ascii.split('.').length).join('.');
  const suffix = last(parts.publicSuffix);
  const domain = last(parts.domain);
  return { domain, label: domain.slice(0, domain.length - suffix.length - 1), suffix };
}
