import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createFetch } from '../../src/shared/httpClient.js';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { freePorts, isPortClosed, runTs, type BrokerProcess } from '../support/brokerProcess.js';

// Development mode serves an identity provider whose users and password are
// printed in the README: it must not end up on the network by a HOST alone.
describe('development mode on a non-loopback HOST', () => {
  let dir: string;
  const started: BrokerProcess[] = [];
  const start = (env: Record<string, string>) => {
    const broker = runTs('src/main.ts', [], env);
    started.push(broker);
    return broker;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'broker-devnet-'));
    await chmod(dir, 0o711);
  });
  afterAll(async () => {
    for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  const devEnv = (name: string, ports: number[]) => ({
    DATA_DIR: join(dir, name),
    HOST: '0.0.0.0',
    PUBLIC_URL: `https://127.0.0.1:${ports[0]}`,
    PORT: String(ports[0]),
    DEV_IDP_PORT: String(ports[1]),
    DEV_REPORTS_PORT: String(ports[2]),
    DEV_GITHUB_PORT: String(ports[3]),
    LOG_LEVEL: 'warn',
  });

  it('HOST=0.0.0.0 without DEV_ALLOW_NETWORK refuses to start, says what to set, and listens nowhere', async () => {
    const ports = await freePorts(4);
    const broker = start(devEnv('refused', ports));
    expect((await broker.exited).code).toBe(78);
    expect(broker.output()).toContain('Invalid configuration');
    expect(broker.output()).toMatch(/HOST: is 0\.0\.0\.0, but development mode listens on loopback only/);
    expect(broker.output()).toContain('DEV_ALLOW_NETWORK=true');
    for (const port of ports) expect(await isPortClosed(port)).toBe(true);
    expect(existsSync(join(dir, 'refused'))).toBe(false);
  });

  it('HOST=0.0.0.0 with DEV_ALLOW_NETWORK=true starts and says so in the log and the banner', async () => {
    const ports = await freePorts(4);
    const env = { ...devEnv('allowed', ports), DEV_ALLOW_NETWORK: 'true' };
    const broker = start(env);
    await broker.waitFor('Connect Broker is running.');
    await broker.waitFor('Press Ctrl-C to stop.');
    const out = broker.output();
    const warning = out
      .split('\n')
      .find((line) => line.includes('"level":40') && line.includes('DEV_ALLOW_NETWORK=true'));
    expect(JSON.parse(warning!)).toMatchObject({ host: '0.0.0.0' });
    expect(out).toContain('!! DEV_ALLOW_NETWORK=true: development mode listens on 0.0.0.0');

    const fetch = createFetch({ extraCaPems: [await readFile(join(env.DATA_DIR, 'tls', 'ca.pem'), 'utf8')] });
    expect((await fetch(`https://127.0.0.1:${ports[0]}/readyz`)).status).toBe(200);
    expect((await fetch(`https://127.0.0.1:${ports[1]}/.well-known/openid-configuration`)).status).toBe(200);
    broker.child.kill('SIGTERM');
    expect(await broker.exited).toEqual({ code: 0, signal: null });
  }, 60_000);
});

describe('production mode', () => {
  const schema = `prod_${Math.random().toString(36).slice(2, 10)}`;
  let dir: string;
  let admin: pg.Client;
  let broker: BrokerProcess | undefined;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: inject('databaseUrl') });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    dir = await mkdtemp(join(tmpdir(), 'broker-prod-'));
  });
  afterAll(async () => {
    if (broker && broker.child.exitCode === null) broker.child.kill('SIGKILL');
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
    await rm(dir, { recursive: true, force: true });
  });

  it('never starts the development servers, on any HOST', async () => {
    const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
    await writeFile(join(dir, 'cert.pem'), tls.certPem);
    await writeFile(join(dir, 'key.pem'), tls.keyPem);
    const url = new URL(inject('databaseUrl'));
    url.searchParams.set('options', `-c search_path=${schema}`);
    const [port] = await freePorts(1);
    broker = runTs('src/main.ts', [], {
      NODE_ENV: 'production',
      HOST: '0.0.0.0',
      PORT: String(port),
      PUBLIC_URL: 'https://broker.example.test',
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: url.href,
      OIDC_ISSUER: 'https://login.example.com',
      OIDC_CLIENT_ID: 'connect-broker',
      OIDC_CLIENT_SECRET: 'client-secret-for-this-test',
      SECRET_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64url')}`,
      TLS_CERT_FILE: join(dir, 'cert.pem'),
      TLS_KEY_FILE: join(dir, 'key.pem'),
      LOG_LEVEL: 'warn',
    });
    await broker.waitFor('Press Ctrl-C to stop.');
    const out = broker.output();
    expect(out).toContain('Identity provider          https://login.example.com');
    expect(out).not.toContain('Report Service');
    expect(out).not.toContain('Demo users');
    expect(out).not.toContain('DEV_ALLOW_NETWORK');
    // The ports development mode would have used beside PORT stay closed.
    expect(await isPortClosed(port! + 1)).toBe(true);
    expect(await isPortClosed(port! + 2)).toBe(true);
    expect(existsSync(join(dir, 'data', 'dev-secrets.json'))).toBe(false);
    broker.child.kill('SIGTERM');
    expect(await broker.exited).toEqual({ code: 0, signal: null });
  });
});
