import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createFetch } from '../../src/shared/httpClient.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { freePorts, runTs, type BrokerProcess } from '../support/brokerProcess.js';

// A production broker whose configuration cannot sign anyone in: start-up refuses what is known
// from the environment, and /readyz says what is known only by asking the issuer, with the reason.

const CLIENT_SECRET = 'client-secret-canary-8b2f';

describe('production start-up and sign-in readiness', () => {
  const schema = `signin_${Math.random().toString(36).slice(2, 10)}`;
  let dir: string;
  let admin: pg.Client;
  let env: Record<string, string>;
  let port: number;
  let broker: BrokerProcess | undefined;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: inject('databaseUrl') });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    dir = await mkdtemp(join(tmpdir(), 'broker-signin-'));
    const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
    await writeFile(join(dir, 'cert.pem'), tls.certPem);
    await writeFile(join(dir, 'key.pem'), tls.keyPem);
    const url = new URL(inject('databaseUrl'));
    url.searchParams.set('options', `-c search_path=${schema}`);
    [port] = (await freePorts(1)) as [number];
    env = {
      NODE_ENV: 'production',
      PORT: String(port),
      PUBLIC_URL: 'https://broker.example.test',
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: url.href,
      // RFC 6761: a name that never resolves, so discovery fails at once on every machine.
      OIDC_ISSUER: 'https://idp.invalid',
      OIDC_CLIENT_ID: 'connect-broker',
      OIDC_CLIENT_SECRET: CLIENT_SECRET,
      SECRET_KEYS: `k1:${Buffer.alloc(32, 4).toString('base64url')}`,
      TLS_CERT_FILE: join(dir, 'cert.pem'),
      TLS_KEY_FILE: join(dir, 'key.pem'),
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => {
    if (broker && broker.child.exitCode === null) broker.child.kill('SIGKILL');
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses to start with a loopback PUBLIC_URL, saying why, before opening anything', async () => {
    const refused = runTs('src/main.ts', [], { ...env, PUBLIC_URL: `https://127.0.0.1:${port}` });
    expect((await refused.exited).code).toBe(78);
    expect(refused.output()).toContain(
      `PUBLIC_URL: is loopback (https://127.0.0.1:${port}), but production sign-in refuses a loopback redirect URI (https://127.0.0.1:${port}/auth/callback)`,
    );
    const { rows } = await admin.query(`SELECT to_regclass('${schema}.schema_migrations') AS t`);
    expect(rows[0].t).toBeNull();
  });

  it('while the issuer does not answer discovery: /readyz is 503 with the reason, /healthz 200, and /login fails only while /readyz says so', async () => {
    broker = runTs('src/main.ts', [], env);
    await broker.waitFor('Press Ctrl-C to stop.');
    const fetch = createFetch({ extraCaPems: [await readFile(join(dir, 'tls', 'ca.pem'), 'utf8')] });
    const base = `https://127.0.0.1:${port}`;

    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    const text = await ready.text();
    expect(ready.status, `${text}\n${broker.output()}`).toBe(503);
    expect(JSON.parse(text)).toEqual({
      status: 'not_ready',
      database: 'ok',
      migrations: expect.objectContaining({ current: true }),
      identityProvider: 'unavailable',
      reasons: [
        expect.stringMatching(
          /^identity provider https:\/\/idp\.invalid: discovery failed \((ENOTFOUND|EAI_AGAIN)\); retrying$/,
        ),
      ],
    });
    expect(text).not.toContain(CLIENT_SECRET);

    const login = await fetch(`${base}/login`, { redirect: 'manual', headers: { accept: 'application/json' } });
    expect(login.status).toBe(503);
    expect(await login.text()).not.toContain(CLIENT_SECRET);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    // The log says it too, for whoever reads it rather than the probe.
    expect(broker.output()).toContain('not ready: sign-in cannot start');
    expect(broker.output()).not.toContain(CLIENT_SECRET);

    broker.child.kill('SIGTERM');
    expect(await broker.exited).toEqual({ code: 0, signal: null });
  });
});
