import type { BlockList } from 'node:net';
import { isIP } from 'node:net';
import { blockListOf } from './egressAddress.js';

/**
 * EGRESS_ALLOW: the internal services the broker may reach although they resolve to an internal
 * address, by host name (the URL's, exactly) or by address range. Parsed once at start.
 */
export interface EgressAllow {
  /** Lower-case host names, without a trailing dot. */
  names: ReadonlySet<string>;
  /** The CIDRs and single addresses. */
  ranges: BlockList;
  /** The entries as written, for the start-up log. */
  entries: readonly string[];
}

/** Outside production, what an unset EGRESS_ALLOW admits: loopback, where the development servers listen. */
export const NON_PRODUCTION_EGRESS_ALLOW = '127.0.0.0/8,::1';

/** Parses a comma-separated list of names and CIDRs; throws an Error naming the first bad entry. */
export function parseEgressAllow(text: string): EgressAllow {
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const names = new Set<string>();
  const cidrs: string[] = [];
  for (const entry of entries) {
    if (isIP(entry.split('/')[0] ?? '') !== 0) cidrs.push(entry);
    else if (
      /^(?=.{1,253}\.?$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.?$/i.test(
        entry,
      )
    )
      names.add(entry.toLowerCase().replace(/\.$/, ''));
    else throw new Error(`${entry} is neither a host name nor an IP address or CIDR`);
  }
  return { names, ranges: blockListOf(cidrs), entries };
}
