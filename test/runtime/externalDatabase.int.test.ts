import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createFetch } from '../../src/shared/httpClient.js';
import { freePorts, runTs, type BrokerProcess } from '../support/brokerProcess.js';

// DATABASE_URL switches to an external server: nothing embedded starts, and
// the migrations land in the database (here: a fresh schema chosen through
// the URL's `options`, on the run's Postgres — the machine's own in CI's second pass).
describe('npm start with DATABASE_URL', () => {
  const schema = `ext_${Math.random().toString(36).slice(2, 10)}`;
  let dataDir: string;
  let broker: BrokerProcess | undefined;
  let admin: pg.Client;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: inject('databaseUrl') });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    dataDir = await mkdtemp(join(tmpdir(), 'broker-ext-'));
    await chmod(dataDir, 0o711);
  });
  afterAll(async () => {
    if (broker && broker.child.exitCode === null) broker.child.kill('SIGKILL');
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('starts no embedded Postgres and applies the migrations to the external server', async () => {
    const url = new URL(inject('databaseUrl'));
    url.searchParams.set('options', `-c search_path=${schema}`);
    const ports = await freePorts(4);
    broker = runTs('src/main.ts', [], {
      DATA_DIR: dataDir,
      DATABASE_URL: url.href,
      PORT: String(ports[0]),
      DEV_IDP_PORT: String(ports[1]),
      DEV_REPORTS_PORT: String(ports[2]),
      DEV_GITHUB_PORT: String(ports[3]),
      LOG_LEVEL: 'warn',
    });
    await broker.waitFor('Connect Broker is running.');
    expect(broker.output()).toContain('external Postgres (DATABASE_URL)');
    expect(broker.output()).not.toContain(url.password || 'no-password-in-url');
    expect(existsSync(join(dataDir, 'postgres'))).toBe(false);

    const fetch = createFetch({ extraCaPems: [await readFile(join(dataDir, 'tls', 'ca.pem'), 'utf8')] });
    const ready = await fetch(`https://127.0.0.1:${ports[0]}/readyz`);
    expect(await ready.json()).toMatchObject({ status: 'ready', migrations: { current: true } });
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${schema}.schema_migrations`);
    expect(rows[0].n).toBeGreaterThan(0);

    broker.child.kill('SIGTERM');
    expect(await broker.exited).toEqual({ code: 0, signal: null });
  });
});

describe('npm start with a bad PROVIDERS_FILE', () => {
  it('stops start-up at once with every problem listed, starting nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'broker-providers-'));
    const file = join(dir, 'providers.json');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(
      file,
      JSON.stringify([
        {
          id: 'evil',
          displayName: 'Evil',
          issuer: 'https://evil\u200b.example',
          clientId: 'c',
          clientSecret: 's',
          scopes: ['x'],
          apiBase: 'https://evil.example/api?access_token=abc',
          audience: 'https://evil.example/api',
        },
      ]),
    );
    const ports = await freePorts(4);
    const broker = runTs('src/main.ts', [], {
      DATA_DIR: join(dir, 'data'),
      PROVIDERS_FILE: file,
      PORT: String(ports[0]),
      DEV_IDP_PORT: String(ports[1]),
      DEV_REPORTS_PORT: String(ports[2]),
      DEV_GITHUB_PORT: String(ports[3]),
    });
    expect((await broker.exited).code).toBe(78);
    expect(broker.output()).toContain('Invalid provider configuration');
    expect(broker.output()).toContain('invisible or bidirectional');
    expect(broker.output()).toContain('credential in its query (access_token)');
    expect(existsSync(join(dir, 'data', 'postgres'))).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });
});
