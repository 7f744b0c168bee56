import { readFileSync } from 'node:fs';
import { domainToASCII } from 'node:url';
import { skeleton } from './confusables.js';
import { registrableDomainOf } from './registrableDomain.js';

// The domains lookalikes are judged against: a shipped list of widely used
// ones (config/protected-domains.txt) plus those the caller adds (the
// configured providers'). Built once: every lookup is a Map hit on a skeleton.

export const SHIPPED_PROTECTED_DOMAINS_FILE = new URL('../../config/protected-domains.txt', import.meta.url);

export interface ProtectedDomains {
  /** Whether this registrable domain (Unicode) is itself protected. */
  has(domain: string): boolean;
  /** The protected domain whose registrable domain has this skeleton. */
  bySkeleton(domainSkeleton: string): string | undefined;
  /** The protected domain and its first label whose first label has this skeleton. */
  byLabelSkeleton(labelSkeleton: string): { domain: string; label: string } | undefined;
}

export class ProtectedDomainsError extends Error {
  override name = 'ProtectedDomainsError';
}

/** Reads a list file: one domain a line, # comments; a line that is not a registrable domain is refused. */
export function readProtectedDomainsFile(file: URL | string = SHIPPED_PROTECTED_DOMAINS_FILE): string[] {
  const domains: string[] = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const text = line.trim();
      if (text === '' || text.startsWith('#')) return;
      const ascii = domainToASCII(text);
      const { domain } = registrableDomainOf(ascii);
      if (ascii === '' || domain === undefined || domainToASCII(domain) !== ascii)
        throw new ProtectedDomainsError(
          `${String(file)}:${i + 1}: ${JSON.stringify(text)} is not a registrable domain`,
        );
      domains.push(text);
    });
  return domains;
}

/**
 * The lookup for a list of domains: each is reduced to its registrable
 * domain (a provider's login.example.com protects example.com); IP
 * literals, single labels and public suffixes protect nothing.
 */
export function protectedDomains(domains: Iterable<string>): ProtectedDomains {
  const exact = new Set<string>();
  const skeletons = new Map<string, string>();
  const labels = new Map<string, { domain: string; label: string }>();
  for (const raw of domains) {
    const ascii = domainToASCII(raw.trim().replace(/\.$/, ''));
    if (ascii === '') continue;
    const { domain, label } = registrableDomainOf(ascii);
    if (domain === undefined || label === undefined || exact.has(domain)) continue;
    exact.add(domain);
    if (!skeletons.has(skeleton(domain))) skeletons.set(skeleton(domain), domain);
    if (!labels.has(skeleton(label))) labels.set(skeleton(label), { domain, label });
  }
  return {
    has: (domain) => exact.has(domain),
    bySkeleton: (domainSkeleton) => skeletons.get(domainSkeleton),
    byLabelSkeleton: (labelSkeleton) => labels.get(labelSkeleton),
  };
}

let shipped: ProtectedDomains | undefined;

/**
 * The shipped list alone, read on first use and kept: it is data that ships
 * with the code, like a table in a module, and is the same for every caller.
 */
export function shippedProtectedDomains(): ProtectedDomains {
  shipped ??= protectedDomains(readProtectedDomainsFile());
  return shipped;
}

/** The shipped list plus the caller's domains (the configured providers' hosts). */
export function protectedDomainsWith(extra: Iterable<string>): ProtectedDomains {
  return protectedDomains([...readProtectedDomainsFile(), ...extra]);
}
