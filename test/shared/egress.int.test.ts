import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:https';
import nock from 'nock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createEgressGuard, type Resolve } from '../../src/shared/egressGuard.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { createRequestFetch } from '../../src/shared/requestFetch.js';
import { createRehearsalTls } from '../production/rehearsalCerts.js';
import { PRODUCTION_ENV } from '../support/productionSettings.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';

// The broker's two fetches (createFetch, createRequestFetch) with the egress guard main.ts gives
// them, against a real HTTPS server on 127.0.0.1 that stands for whatever an internal address
// holds: the names are resolved by the test's own resolver, as an attacker's DNS would answer. No
// test reaches the network: the address a rebinding name answers first stands for a public one, made
// admissible by EGRESS_ALLOW (127.0.0.2, where a second server listens on the same port).

const NAMES = ['service.internal', 'rebind.example', 'mapped.example', 'metadata.example'];
const PERMITTED = '127.0.0.2';

let server: HttpsTestServer;
let permitted: Server;
let caPem: string;
let reached: string[];

beforeAll(async () => {
  const tls = await createRehearsalTls(NAMES);
  caPem = tls.caPem;
  server = await listenHttps(tls);
  server.setHandler((req, res) => {
    reached.push(`${req.headers.host}${req.url}`);
    res.end('internal answer');
  });
  // Each answer closes its connection, so the next request connects (and resolves) anew.
  permitted = createServer({ key: tls.keyPem, cert: tls.certPem }, (_req, res) =>
    res.writeHead(200, { connection: 'close' }).end('permitted answer'),
  );
  await new Promise<void>((resolve) => permitted.listen(Number(port()), PERMITTED, resolve));
  // setupNetwork.ts lets loopback through nock; these names are loopback too, by this test's resolver.
  nock.enableNetConnect((host) => /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/.test(host) || isOurs(host));
});
afterAll(async () => {
  nock.enableNetConnect(/^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/);
  permitted.closeAllConnections();
  await new Promise((resolve) => permitted.close(resolve));
  await server.close();
});
// The names above, and the literals the guard must refuse before any connection is made.
const isOurs = (host: string) =>
  NAMES.some((name) => host.startsWith(`${name}:`)) ||
  /^(169\.254\.169\.254|\[?fd00:ec2::254\]?|\[?::ffff:7f00:1\]?)(:\d+)?$/.test(host);
beforeEach(() => {
  reached = [];
});

const port = () => new URL(server.origin).port;
const url = (host: string) => `https://${host}:${port()}/secret`;
const answers = (...each: LookupAddress[][]): Resolve & { calls: string[] } => {
  const calls: string[] = [];
  return Object.assign(
    async (hostname: string) => {
      calls.push(hostname);
      return each[Math.min(calls.length, each.length) - 1] ?? [];
    },
    { calls },
  );
};
const v4 = (address: string): LookupAddress => ({ address, family: 4 });
const v6 = (address: string): LookupAddress => ({ address, family: 6 });

function fetches(env: Record<string, string>, resolve: Resolve, timeoutMs = 2_000): [string, Fetch][] {
  const egress = createEgressGuard({ allow: loadConfig(env).egress.allow, resolve });
  return [
    ['createFetch', createFetch({ extraCaPems: [caPem], timeoutMs, egress })],
    ['createRequestFetch', createRequestFetch({ extraCaPems: [caPem], timeoutMs, egress })],
  ];
}

/** The failure's own message: fetch wraps it as `cause`, undici's request throws it. */
async function failure(fetch: Fetch, target: string): Promise<string> {
  const err = await fetch(target).then(
    () => undefined,
    (e: Error & { cause?: Error }) => e,
  );
  if (!err) throw new Error(`${target} answered`);
  return err.cause?.message ?? err.message;
}

describe('egress in production mode (EGRESS_ALLOW unset)', () => {
  it('refuses a name that resolves to loopback, naming the host and the kind, and sends nothing', async () => {
    for (const [name, fetch] of fetches(PRODUCTION_ENV, answers([v4('127.0.0.1')]))) {
      expect(await failure(fetch, url('service.internal')), name).toMatch(
        /^egress to service\.internal refused: it resolves to 127\.0\.0\.1 \(loopback\)/,
      );
    }
    expect(reached).toEqual([]);
  });

  it('refuses IPv4-mapped IPv6 loopback, resolved or written as the URL host', async () => {
    for (const [name, fetch] of fetches(PRODUCTION_ENV, answers([v6('::ffff:127.0.0.1')]))) {
      expect(await failure(fetch, url('mapped.example')), name).toMatch(/resolves to ::ffff:127\.0\.0\.1 \(loopback\)/);
      expect(await failure(fetch, url('[::ffff:127.0.0.1]')), name).toMatch(
        /^egress to ::ffff:7f00:1 refused: it is loopback/,
      );
      expect(await failure(fetch, url('127.0.0.1')), name).toMatch(/^egress to 127\.0\.0\.1 refused: it is loopback/);
    }
    expect(reached).toEqual([]);
  });

  it('refuses cloud metadata addresses, by name and as literals', async () => {
    for (const [name, fetch] of fetches(PRODUCTION_ENV, answers([v4('169.254.169.254')]))) {
      expect(await failure(fetch, url('metadata.example')), name).toMatch(/169\.254\.169\.254 \(cloud metadata\)/);
      expect(await failure(fetch, 'http://169.254.169.254/latest/meta-data/'), name).toMatch(/it is cloud metadata/);
      expect(await failure(fetch, 'http://[fd00:ec2::254]/latest/meta-data/'), name).toMatch(/it is cloud metadata/);
    }
  });

  it('refuses a name whose answer holds an admitted address first and loopback second', async () => {
    const env = { ...PRODUCTION_ENV, EGRESS_ALLOW: PERMITTED };
    for (const [name, fetch] of fetches(env, answers([v4(PERMITTED), v4('127.0.0.1')]))) {
      expect(await failure(fetch, url('rebind.example')), name).toMatch(/resolves to 127\.0\.0\.1 \(loopback\)/);
    }
    expect(reached).toEqual([]);
  });

  it('cannot be rebound: a name answering an admitted address, then loopback, never reaches loopback', async () => {
    const env = { ...PRODUCTION_ENV, EGRESS_ALLOW: PERMITTED };
    const resolve = answers([v4(PERMITTED)], [v4('127.0.0.1')]);
    for (const [name, fetch] of fetches(env, resolve)) {
      resolve.calls.length = 0;
      // The first connection goes to the address it was judged by; the second resolves anew and is refused.
      expect(await (await fetch(url('rebind.example'))).text(), name).toBe('permitted answer');
      expect(await failure(fetch, url('rebind.example')), name).toMatch(/resolves to 127\.0\.0\.1 \(loopback\)/);
      expect(resolve.calls, name).toEqual(['rebind.example', 'rebind.example']);
    }
    expect(reached).toEqual([]);
  });
});

describe('EGRESS_ALLOW', () => {
  it('admits a named internal service, and only that name', async () => {
    const env = { ...PRODUCTION_ENV, EGRESS_ALLOW: 'service.internal' };
    for (const [name, fetch] of fetches(env, answers([v4('127.0.0.1')]))) {
      expect(await (await fetch(url('service.internal'))).text(), name).toBe('internal answer');
      expect(await failure(fetch, url('rebind.example')), name).toMatch(/\(loopback\)/);
    }
    expect(reached).toEqual([`service.internal:${port()}/secret`, `service.internal:${port()}/secret`]);
  });

  it('admits the addresses of a CIDR, and only those', async () => {
    const env = { ...PRODUCTION_ENV, EGRESS_ALLOW: '127.0.0.0/8' };
    const resolve = answers([v4('127.0.0.1')], [v4('10.0.0.1')]);
    for (const [name, fetch] of fetches(env, resolve)) {
      resolve.calls.length = 0;
      expect(await (await fetch(url('rebind.example'))).text(), name).toBe('internal answer');
      expect(await failure(fetch, url('metadata.example')), name).toMatch(/10\.0\.0\.1 \(private \(RFC 1918\)\)/);
    }
    expect(reached).toHaveLength(2);
  });

  it('outside production admits loopback when unset, where the development servers listen', async () => {
    for (const [name, fetch] of fetches({ NODE_ENV: 'test' }, answers([v4('127.0.0.1')]))) {
      expect(await (await fetch(url('service.internal'))).text(), name).toBe('internal answer');
      expect(await failure(fetch, 'http://169.254.169.254/'), name).toMatch(/it is cloud metadata/);
    }
    expect(reached).toHaveLength(2);
  });
});
