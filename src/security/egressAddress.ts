import { BlockList, isIP } from 'node:net';

/**
 * The kinds of address the broker never connects to unless the operator admits them (EGRESS_ALLOW):
 * each names the ranges it covers. The first kind that holds an address names it, so the narrower
 * kinds (a metadata address inside link-local, broadcast inside reserved) come first. Node's
 * BlockList also matches an IPv4 rule against the IPv4-mapped IPv6 form (`::ffff:127.0.0.1`).
 * Ranges: RFC 6890 (special-purpose registries), RFC 6598 (shared address space), RFC 4193 (unique
 * local), RFC 4291 §2.5.5 (IPv4-compatible and -mapped), RFC 6052 (NAT64's well-known prefix).
 */
const KINDS: ReadonlyArray<readonly [kind: string, ranges: readonly string[]]> = [
  ['cloud metadata', ['169.254.169.254/32', '169.254.170.2/32', '100.100.100.200/32', 'fd00:ec2::254/128']],
  ['loopback', ['127.0.0.0/8', '::1/128']],
  ['unspecified', ['0.0.0.0/8', '::/128']],
  ['broadcast', ['255.255.255.255/32']],
  ['private (RFC 1918)', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']],
  ['link-local', ['169.254.0.0/16', 'fe80::/10']],
  ['carrier-grade NAT (RFC 6598)', ['100.64.0.0/10']],
  ['unique-local', ['fc00::/7']],
  ['multicast', ['224.0.0.0/4', 'ff00::/8']],
  [
    'reserved',
    [
      '192.0.0.0/24',
      '192.0.2.0/24',
      '198.18.0.0/15',
      '198.51.100.0/24',
      '203.0.113.0/24',
      '240.0.0.0/4',
      '::/96',
      '64:ff9b::/96',
      '64:ff9b:1::/48',
      '100::/64',
      '2001:db8::/32',
    ],
  ],
];

const LISTS = KINDS.map(([kind, ranges]) => ({ kind, list: blockListOf(ranges) }));

/** What kind of internal address `address` (an IP literal) is, or undefined for a public one. */
export function internalKindOf(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return LISTS.find(({ list }) => list.check(address, type))?.kind;
}

/** A BlockList of CIDRs (`10.0.0.0/8`, `fd00::/8`) and single addresses; throws on an entry that is neither. */
export function blockListOf(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', bits] = entry.split('/');
    const family = isIP(address);
    if (family === 0) throw new Error(`${entry} is not an IP address or CIDR`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) {
      list.addAddress(address, type);
      continue;
    }
    const prefix = Number(bits);
    if (!/^\d{1,3}$/.test(bits) || prefix > (family === 4 ? 32 : 128))
      throw new Error(`${entry} has a bad prefix length`);
    list.addSubnet(address, prefix, type);
  }
  return list;
}
