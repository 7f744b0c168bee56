import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { doctorCommand } from '../../src/cli/doctor.js';
import { generateDevAuthKeys } from '../../src/dev/devAuthKeys.js';
import { createDevAuthServer } from '../../src/dev/devAuthServer.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { createRender } from '../../src/web/render.js';
import { freePorts, runTs } from '../support/brokerProcess.js';
import { mapHosts } from '../support/hostMap.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';
import { namedCertificate } from '../support/namedCertificate.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// `broker doctor` checks a production environment without starting the broker. A production
// issuer and PUBLIC_URL cannot be loopback, so the good environment names public hosts and the
// doctor's fetch reaches them on loopback (test/support/hostMap.ts): a real oidc-provider issuer
// at https://idp.example.test, the run's Postgres, a certificate for broker.example.test.
// The broken one runs as an operator runs it, its own process.

const ISSUER = 'https://idp.example.test';
const PUBLIC_URL = 'https://broker.example.test';
const CLIENT_SECRET = `client-secret-canary-${randomBytes(6).toString('hex')}`;
const PROVIDER_SECRET = `provider-secret-canary-${randomBytes(6).toString('hex')}`;
const DB_PASSWORD = `db-password-canary-${randomBytes(6).toString('hex')}`;
const KEY = randomBytes(32).toString('base64url');

let dir: string;
let db: TestDb;
let idp: HttpsTestServer;
let fetch: ReturnType<typeof createFetch>;
let good: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'broker-doctor-'));
  const tls = await loadOrCreateLocalTls(join(dir, 'ca'));
  idp = await listenHttps(tls);
  const auth = createDevAuthServer({
    issuer: ISSUER,
    brand: 'Identity provider',
    cookiePrefix: 'idp',
    keys: await generateDevAuthKeys(),
    clients: [
      { clientId: 'connect-broker', clientSecret: CLIENT_SECRET, redirectUris: [`${PUBLIC_URL}/auth/callback`] },
      {
        clientId: 'reports-client',
        clientSecret: PROVIDER_SECRET,
        redirectUris: [`${PUBLIC_URL}/oauth/callback/reports`],
      },
    ],
    resources: [{ identifier: `${ISSUER}/api`, scope: 'reports:read', accessTokenTtlSeconds: 600 }],
    subjectOf: (login) => login,
    consent: 'implicit',
    render: createRender({ cache: false }),
    logger: createLogger({ level: 'silent' }),
  });
  // Its endpoints are written with the host asked for (X-Forwarded-Host, set by mapHosts), as behind a proxy.
  auth.provider.proxy = true;
  idp.setHandler(auth.handler);
  fetch = mapHosts(createFetch({ extraCaPems: [tls.caPem] }), { 'idp.example.test': idp.origin });

  db = await createTestDb();
  const cert = await namedCertificate('broker.example.test');
  await writeFile(join(dir, 'cert.pem'), cert.certPem);
  await writeFile(join(dir, 'key.pem'), cert.keyPem);
  const providersFile = join(dir, 'providers.json');
  await writeFile(
    providersFile,
    JSON.stringify([
      {
        id: 'reports',
        displayName: 'Reports',
        issuer: ISSUER,
        clientId: 'reports-client',
        clientSecret: { env: 'REPORTS_CLIENT_SECRET' },
        scopes: ['reports:read'],
        apiBase: `${ISSUER}/api`,
        audience: `${ISSUER}/api`,
      },
    ]),
  );
  const url = new URL((db.pooledUrl ?? db.url).reveal());
  url.searchParams.set('options', `-c search_path=${db.schema}`);
  good = {
    NODE_ENV: 'production',
    PUBLIC_URL,
    DATABASE_URL: url.href,
    OIDC_ISSUER: ISSUER,
    OIDC_CLIENT_ID: 'connect-broker',
    OIDC_CLIENT_SECRET: CLIENT_SECRET,
    SECRET_KEYS: `k1:${KEY}`,
    TLS_CERT_FILE: join(dir, 'cert.pem'),
    TLS_KEY_FILE: join(dir, 'key.pem'),
    PROVIDERS_FILE: providersFile,
    REPORTS_CLIENT_SECRET: PROVIDER_SECRET,
  };
});
afterAll(async () => {
  await idp?.close();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

async function doctor(env: Record<string, string>): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await doctorCommand([], env, (line) => lines.push(line), { fetch });
  return { code, lines };
}

function expectNoSecret(text: string): void {
  for (const secret of [CLIENT_SECRET, PROVIDER_SECRET, DB_PASSWORD, KEY]) expect(text).not.toContain(secret);
}

describe('broker doctor', () => {
  it('passes a good production environment: every check OK, exit 0', async () => {
    const { code, lines } = await doctor(good);
    expect(code, lines.join('\n')).toBe(0);
    const text = lines.join('\n');
    expect(text).toMatch(/^OK +environment +every variable parses \(production mode\)$/m);
    expect(text).toMatch(/^OK +OIDC_ISSUER +https:\/\/idp\.example\.test: discovery ok, sign-in can start$/m);
    expect(text).toMatch(
      /^OK +OIDC_CLIENT_ID +connect-broker and the redirect URI https:\/\/broker\.example\.test\/auth\/callback are registered at https:\/\/idp\.example\.test$/m,
    );
    expect(text).toMatch(/^OK +DATABASE_URL +postgres:\/\/\S+: connected$/m);
    expect(text).toMatch(/^OK +DATABASE_URL +all \d+ migrations applied$/m);
    expect(text).toMatch(/^OK +TLS_KEY_FILE +the private key of the certificate/m);
    expect(text).toMatch(/^OK +TLS_CERT_FILE +names broker\.example\.test \(PUBLIC_URL's host\)$/m);
    expect(text).toMatch(
      /^OK +provider reports +ok \(discovered; authorization endpoint on https:\/\/idp\.example\.test\)$/m,
    );
    expect(lines.at(-1)).toMatch(/^0 FAIL, 0 WARN, \d+ OK$/);
    expectNoSecret(text);
  });

  it('fails a client id the issuer does not know: the issuer answers the probe itself instead of sending it back', async () => {
    const { code, lines } = await doctor({ ...good, OIDC_CLIENT_ID: 'not-registered' });
    expect(code).toBe(1);
    expect(lines.join('\n')).toMatch(
      /^FAIL +OIDC_CLIENT_ID +https:\/\/idp\.example\.test refused a sign-in without sending it back \(HTTP 400\): register the redirect URI https:\/\/broker\.example\.test\/auth\/callback for client not-registered, or check OIDC_CLIENT_ID$/m,
    );
  });

  it('fails a certificate for another host and a key that is not its own', async () => {
    const other = await namedCertificate('other.example.test');
    await writeFile(join(dir, 'other-key.pem'), other.keyPem);
    await writeFile(join(dir, 'other-cert.pem'), other.certPem);
    const { code, lines } = await doctor({ ...good, TLS_CERT_FILE: join(dir, 'other-cert.pem') });
    expect(code).toBe(1);
    expect(lines.join('\n')).toMatch(
      /^FAIL +TLS_CERT_FILE +\S+other-cert\.pem does not name broker\.example\.test, PUBLIC_URL's host \(it names DNS:other\.example\.test\)$/m,
    );
    expect(lines.join('\n')).toMatch(
      /^FAIL +TLS_KEY_FILE +\S+key\.pem is not the key of the certificate in \S+other-cert\.pem$/m,
    );
  });

  it('in its own process, lists every problem of a broken environment, one line each, exit 1, and prints no secret', async () => {
    const [closed] = await freePorts(1);
    const providersFile = join(dir, 'broken-providers.json');
    await writeFile(
      providersFile,
      JSON.stringify([
        {
          id: 'memo',
          kind: 'mcp',
          displayName: 'Memo',
          url: 'https://mcp.invalid/mcp',
          prefix: 'memo',
          registration: 'auto',
        },
      ]),
    );
    const run = runTs('src/cli/broker.ts', ['doctor'], {
      ...good,
      SESSION_TTL_SECONDS: '5',
      OIDC_ISSUER: 'https://idp.invalid',
      DATABASE_URL: `postgres://broker:${DB_PASSWORD}@127.0.0.1:${closed}/broker`,
      TLS_CERT_FILE: join(dir, 'missing-cert.pem'),
      PROVIDERS_FILE: providersFile,
    });
    expect((await run.exited).code).toBe(1);
    const text = run.output();
    expect(text).toMatch(/^FAIL +SESSION_TTL_SECONDS +\S/m);
    expect(text).toMatch(/^FAIL +OIDC_ISSUER +https:\/\/idp\.invalid: discovery failed \((ENOTFOUND|EAI_AGAIN)\)$/m);
    expect(text).toMatch(
      new RegExp(
        `^FAIL +DATABASE_URL +postgres://broker:\\*\\*\\*@127\\.0\\.0\\.1:${closed}/broker: ECONNREFUSED$`,
        'm',
      ),
    );
    expect(text).toMatch(/^FAIL +TLS_CERT_FILE +\S+missing-cert\.pem cannot be read \(ENOENT\)$/m);
    expect(text).toMatch(
      /^FAIL +upstream memo +the MCP server https:\/\/mcp\.invalid\/mcp could not be reached \((ENOTFOUND|EAI_AGAIN)\)$/m,
    );
    expect(text).toMatch(/^5 FAIL, \d+ WARN, \d+ OK$/m);
    expectNoSecret(text);
  });
});
