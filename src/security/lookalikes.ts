import { domainToASCII } from 'node:url';
import { skeleton } from './confusables.js';
import { tldSuitsLabel } from './countryScript.js';
import { wholeScriptOf } from './mixedScript.js';
import type { ProtectedDomains } from './protectedDomains.js';
import type { DomainParts } from './registrableDomain.js';

export interface Lookalike {
  rule: 'confusable' | 'whole-script-confusable' | 'embedded-domain';
  /** Why, in words to follow "<what> has a host ". */
  reason: string;
}

// A label whose skeleton is plain Latin letters, digits and hyphens reads as a Latin label.
const READS_LATIN = /^[a-z0-9-]+$/;

/**
 * Whether a host imitates a domain: its registrable domain, or its first
 * label under any suffix, has the skeleton of a protected one without being
 * it (UTS #39 §4); a label is one script other than Latin whose every letter
 * has a Latin lookalike (a whole-script confusable, UTS #39 §4: аррӏе in
 * Cyrillic) under a top-level domain not at home with that script
 * (countryScript.ts: сахар.рф and αθήνα.gr are national names, сахар.com
 * reads caxap.com); or a protected domain is written inside
 * it before its public suffix begins (github.com.evil.example) or before a
 * hyphen (github.com-login.example). A host under a protected domain is its own.
 */
export function lookalikeOf(host: string, parts: DomainParts, list: ProtectedDomains): Lookalike | undefined {
  const { domain, label, suffix } = parts;
  if (domain !== undefined && list.has(domain)) return undefined;
  if (domain !== undefined && label !== undefined) {
    const byLabel = list.byLabelSkeleton(skeleton(label));
    const of = list.bySkeleton(skeleton(domain)) ?? (byLabel && byLabel.label !== label ? byLabel.domain : undefined);
    if (of !== undefined) {
      const script = wholeScriptOf(label);
      return script === undefined
        ? { rule: 'confusable', reason: `that looks like ${of}` }
        : { rule: 'whole-script-confusable', reason: `written in ${script} that looks like ${of}` };
    }
  }
  const latinLookalike = latinLookalikeLabel(host, suffix);
  if (latinLookalike !== undefined) return latinLookalike;
  const of = embeddedDomain(host, suffix, list);
  return of === undefined ? undefined : { rule: 'embedded-domain', reason: `with ${of} written inside another domain` };
}

/** A label (the registrable one or a subdomain's) in one non-Latin script, every letter of which reads as Latin. */
function latinLookalikeLabel(host: string, suffix: string | undefined): Lookalike | undefined {
  const labels = host.split('.');
  const own = suffix === undefined ? labels : labels.slice(0, labels.length - suffix.split('.').length);
  const tld = labels[labels.length - 1] ?? '';
  for (const label of own) {
    const script = wholeScriptOf(label);
    if (script === undefined || !READS_LATIN.test(skeleton(label)) || tldSuitsLabel(tld, label)) continue;
    return {
      rule: 'whole-script-confusable',
      reason: `label written in ${script} whose every letter looks Latin (${domainToASCII(label)})`,
    };
  }
  return undefined;
}

function embeddedDomain(host: string, suffix: string | undefined, list: ProtectedDomains): string | undefined {
  // A '.'-bounded match must end before the public suffix: google.com.au is Google's own.
  const suffixStart = suffix === undefined ? host.length : host.length - suffix.length;
  const starts = [0];
  const ends: number[] = [];
  for (let i = 0; i < host.length; i++) {
    if (host[i] === '.') {
      starts.push(i + 1);
      if (i < suffixStart) ends.push(i);
    } else if (host[i] === '-') ends.push(i);
  }
  for (const start of starts) {
    for (const end of ends) {
      if (end <= start) continue;
      const candidate = host.slice(start, end);
      // Every protected domain has a dot; a run of labels without one cannot be one.
      if (!candidate.includes('.')) continue;
      const hit = list.has(candidate) ? candidate : list.bySkeleton(skeleton(candidate));
      if (hit !== undefined) return hit;
    }
  }
  return undefined;
}
