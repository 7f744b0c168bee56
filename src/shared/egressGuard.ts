import dns, { type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { EgressAllow } from '../security/egressAllow.js';
import { internalKindOf } from '../security/egressAddress.js';

/** A host's addresses, as dns.lookup(host, { all: true }) answers. */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

/** Egress refused: the host, the address and its kind; nothing was sent. */
export class EgressRefusedError extends Error {
  override name = 'EgressRefusedError';
  readonly code = 'EGRESS_REFUSED';
}

export interface EgressGuard {
  /** For the socket (net/tls `lookup`): resolves, refuses an internal address, answers what it checked. */
  lookup: LookupFunction;
  /** The refusal for `address` reached by `hostname`, or undefined when it may be reached. */
  refusal(hostname: string, address: string): EgressRefusedError | undefined;
}

/**
 * Every connection the broker opens to a name or an address someone else chose (a provider's or an
 * upstream's metadata, token, registration and revocation endpoints, key sets, the webhook) first
 * passes here: the name is resolved once, every address it resolves to is judged, and the socket
 * connects to the addresses judged, so a name that resolves anew between the check and the connect
 * (DNS rebinding) cannot move it. A host the operator names in EGRESS_ALLOW, or an address in one of
 * its ranges, is admitted.
 */
export function createEgressGuard(options: { allow: EgressAllow; resolve?: Resolve }): EgressGuard {
  const { allow } = options;
  // dns.lookup read at call time, so a preload that maps names (test/production/hostnames.mjs) applies.
  const resolve = options.resolve ?? ((hostname) => dns.promises.lookup(hostname, { all: true }));

  function refusal(hostname: string, address: string): EgressRefusedError | undefined {
    if (allow.names.has(hostname.toLowerCase().replace(/\.$/, ''))) return undefined;
    const kind = internalKindOf(address);
    if (kind === undefined) return undefined;
    if (isIP(address) !== 0 && allow.ranges.check(address, isIP(address) === 4 ? 'ipv4' : 'ipv6')) return undefined;
    const why = hostname === address ? `it is ${kind}` : `it resolves to ${address} (${kind})`;
    return new EgressRefusedError(
      `egress to ${hostname} refused: ${why}; EGRESS_ALLOW admits an internal service by name or range`,
    );
  }

  const lookup = ((hostname: string, lookupOptions: dns.LookupOptions, callback: LookupCallback) => {
    resolve(hostname).then(
      (found) => {
        const family = lookupOptions.family === 'IPv4' ? 4 : lookupOptions.family === 'IPv6' ? 6 : lookupOptions.family;
        const addresses = family ? found.filter((a) => a.family === family) : found;
        if (addresses.length === 0) {
          const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
          return callback(err, lookupOptions.all ? [] : '', 0);
        }
        // Any internal answer refuses the name: its other answers are the same party's.
        for (const { address } of addresses) {
          const refused = refusal(hostname, address);
          if (refused) return callback(refused, lookupOptions.all ? [] : '', 0);
        }
        if (lookupOptions.all) return callback(null, addresses);
        const [first] = addresses as [LookupAddress];
        callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, lookupOptions.all ? [] : '', 0),
    );
  }) as LookupFunction;

  return { lookup, refusal };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
