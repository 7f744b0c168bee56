import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import type { Fetch } from '../../src/shared/httpClient.js';

// The rehearsal's names: not loopback (production refuses loopback issuers and public URLs), all
// on this machine. Its processes load hostnames.mjs; the test's own fetch resolves them here;
// Chromium through --host-resolver-rules.

export const DOMAIN = 'rehearsal.example';
export const HOSTS = {
  broker: `broker.${DOMAIN}`,
  idp: `idp.${DOMAIN}`,
  github: `github.${DOMAIN}`,
  upstream: `upstream.${DOMAIN}`,
} as const;

/** The preload that maps the names in another Node process (`node --import <this> …`). */
export const HOSTNAMES_PRELOAD = fileURLToPath(new URL('./hostnames.mjs', import.meta.url));

/** Chromium's switch for the same mapping (ports kept). */
export const CHROMIUM_HOST_RULES = `--host-resolver-rules=MAP *.${DOMAIN} 127.0.0.1`;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

function lookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  if (!hostname.endsWith(`.${DOMAIN}`)) return void dnsLookup(hostname, options, callback as never);
  if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
}

/** A fetch for the test process: the rehearsal's names on this machine, its CA trusted (and no other). */
export function rehearsalFetch(caPem: string, timeoutMs = 60_000): Fetch {
  const dispatcher = new Agent({
    connect: { ca: caPem, lookup, rejectUnauthorized: true },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  return ((input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) =>
    fetch(input, { ...init, ...({ dispatcher } as object) })) as Fetch;
}
