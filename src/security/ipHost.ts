import { isIP } from 'node:net';

// The WHATWG URL parser already reads every IPv4 spelling a browser accepts
// (decimal 2130706433, hex 0x7f.1, octal 0177.0.0.1, short 127.1) into the
// dotted form and IPv6 into its canonical bracketed form ([::ffff:7f00:1]),
// so a parsed hostname is an IP literal exactly when node:net says so. Zone
// ids ([fe80::1%25eth0]) never parse (WHATWG URL has none), so never get here.

/** Whether a parsed URL's hostname is an IP address literal (IPv4, or IPv6 in brackets). */
export function isIpLiteral(hostname: string): boolean {
  // An IPv4 literal ends in a digit and an IPv6 one is bracketed: other names need no further look.
  if (!hostname.startsWith('[') && !/[0-9]$/.test(hostname)) return false;
  return isIP(unbracketed(hostname)) !== 0;
}

/**
 * Whether a parsed hostname names this machine: localhost and its subdomains
 * (RFC 6761 §6.3), 127.0.0.0/8, ::1, and 127.0.0.0/8 mapped into IPv6.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  const v6 = unbracketed(host);
  if (isIP(v6) !== 6) return false;
  if (v6 === '::1') return true;
  // ::ffff:7f00:1 is 127.0.0.1 mapped (RFC 4291 §2.5.5.2); the parser always writes it in hex.
  return /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(v6);
}

const unbracketed = (hostname: string) => hostname.replace(/^\[|\]$/g, '');
