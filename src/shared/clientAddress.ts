import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import proxyAddr from 'proxy-addr';

/** Which peers may name the client in X-Forwarded-For (TRUST_PROXY), compiled once. */
export interface ProxyTrust {
  /** The setting as parsed: `none`, `2 hops`, or the addresses and ranges. For the start-up log. */
  readonly shown: string;
  /** proxy-addr's test: whether the address `hop` steps from the broker is a trusted proxy. */
  readonly trusts: (address: string, hop: number) => boolean;
}

export const TRUST_NO_PROXY: ProxyTrust = { shown: 'none', trusts: () => false };

// proxy-addr's names for the private ranges, accepted beside addresses and CIDRs.
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const MAX_HOPS = 10;

export class TrustProxyError extends Error {
  override name = 'TrustProxyError';
}

/**
 * TRUST_PROXY: unset trusts no peer; a number trusts that many hops nearest the broker (every
 * peer that connects is taken for the first of them); otherwise a comma-separated list of
 * addresses, CIDRs or proxy-addr's range names. Throws TrustProxyError on anything else.
 */
export function parseTrustProxy(value: string | undefined): ProxyTrust {
  const text = value?.trim() ?? '';
  if (text === '') return TRUST_NO_PROXY;
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops < 1 || hops > MAX_HOPS)
      throw new TrustProxyError(`a hop count must be 1 to ${MAX_HOPS}; leave it unset to trust no proxy`);
    return { shown: `${hops} hop${hops === 1 ? '' : 's'}`, trusts: (_address, hop) => hop < hops };
  }
  const entries = text.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (NAMED_RANGES.has(entry)) continue;
    // Only the notations node:net calls addresses: ipaddr.js would also take "10.1" or "0x0a.0.0.1".
    const address = entry.includes('/') ? entry.slice(0, entry.lastIndexOf('/')) : entry;
    if (isIP(address) === 0)
      throw new TrustProxyError(
        `"${entry}" is not an IP address, a CIDR or one of ${[...NAMED_RANGES].join(', ')}; give a hop count or a comma-separated list of the proxies' addresses`,
      );
  }
  try {
    return { shown: entries.join(', '), trusts: proxyAddr.compile(entries) };
  } catch (err) {
    throw new TrustProxyError(`${(err as Error).message}; give the proxies' addresses or CIDRs, e.g. 10.0.0.0/8`);
  }
}

/**
 * The client's address: the TCP peer's, unless the peer is a trusted proxy; then the
 * X-Forwarded-For entry it added, and so on while the entry is itself a trusted proxy's.
 * Both the Express app and the plain node:http /mcp path ask this function.
 */
export function clientAddressOf(req: IncomingMessage, trust: ProxyTrust): string {
  // A socket already closed has no peer address; proxy-addr then has nothing to start from.
  if (req.socket.remoteAddress === undefined) return 'unknown';
  return proxyAddr(req, trust.trusts);
}
