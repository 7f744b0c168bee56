import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, customFetch, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetch } from '../../src/shared/httpClient.js';
import { freePorts, isPortClosed, runTs, type BrokerProcess } from '../support/brokerProcess.js';

// The development stack exactly as `npm start` runs it, in its own process,
// from an empty data folder. Each step builds on the one before.
describe('npm start (development stack)', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let ports: number[];
  const started: BrokerProcess[] = [];

  const start = () => {
    const broker = runTs('src/main.ts', [], env);
    started.push(broker);
    return broker;
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'broker-data-'));
    await chmod(dataDir, 0o711); // as a fresh `.data/` would be
    ports = await freePorts(4);
    env = {
      DATA_DIR: dataDir,
      PORT: String(ports[0]),
      DEV_IDP_PORT: String(ports[1]),
      DEV_REPORTS_PORT: String(ports[2]),
      DEV_GITHUB_PORT: String(ports[3]),
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => {
    for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  const postgresRunning = () => {
    const out = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
    return out.split('\n').some((line) => line.includes(join(dataDir, 'postgres')));
  };

  it('boots from an empty data folder, serves HTTPS and stops cleanly on SIGTERM', async () => {
    const broker = start();
    await broker.waitFor('Connect Broker is running.');
    const out = broker.output();
    for (const port of ports) expect(out).toContain(`https://127.0.0.1:${port}`);
    expect(out).toContain(`https://127.0.0.1:${ports[0]}/mcp`);
    expect(out).toMatch(/alice, bob, mallory/);
    expect(out).toContain('connect-dev');
    // No warning that is not news: oidc-provider's Node.js 20 runtime warning and its in-memory adapter's.
    expect(out).not.toContain('oidc-provider WARNING');

    const fetch = createFetch({ extraCaPems: [await readFile(join(dataDir, 'tls', 'ca.pem'), 'utf8')] });
    const ready = await fetch(`https://127.0.0.1:${ports[0]}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', database: 'ok', migrations: { current: true } });
    expect(await (await fetch(`https://127.0.0.1:${ports[0]}/healthz`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`https://127.0.0.1:${ports[1]}/.well-known/openid-configuration`)).status).toBe(200);
    expect(postgresRunning()).toBe(true);

    broker.child.kill('SIGTERM');
    expect(await broker.exited).toEqual({ code: 0, signal: null });
    for (const port of ports) expect(await isPortClosed(port)).toBe(true);
    expect(postgresRunning()).toBe(false);
    expect(existsSync(join(dataDir, 'broker.pid'))).toBe(false);
  });

  it('restarts on the existing data folder, keeping its keys and database', async () => {
    const secretsBefore = await readFile(join(dataDir, 'dev-secrets.json'), 'utf8');
    const caBefore = await readFile(join(dataDir, 'tls', 'ca.pem'), 'utf8');
    const broker = start();
    await broker.waitFor('Connect Broker is running.');
    expect(broker.output()).not.toContain('initialising embedded Postgres');
    expect(await readFile(join(dataDir, 'dev-secrets.json'), 'utf8')).toBe(secretsBefore);
    expect(await readFile(join(dataDir, 'tls', 'ca.pem'), 'utf8')).toBe(caBefore);
  });

  it('refuses a second start on the same data folder with a clear message', async () => {
    const second = start();
    const { code } = await second.exited;
    expect(code).toBe(78);
    expect(second.output()).toMatch(/Another broker \(pid \d+\) is already running/);
  });

  it("dev-token prints, as its last line, an MCP token the running server's issuer signed for alice", async () => {
    const cli = runTs('src/cli/broker.ts', ['dev-token', '--user', 'alice'], env);
    expect((await cli.exited).code).toBe(0);
    const token = cli.output().trim().split('\n').at(-1)!;
    const caPem = await readFile(join(dataDir, 'tls', 'ca.pem'), 'utf8');
    const fetch = createFetch({ extraCaPems: [caPem] });
    const issuer = `https://127.0.0.1:${ports[1]}`;
    const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`), {
      [customFetch]: (url, init) => fetch(url, init as RequestInit),
    });
    const { payload, protectedHeader } = await jwtVerify(token, jwks, {
      issuer,
      audience: `https://127.0.0.1:${ports[0]}/mcp`,
      algorithms: ['ES256'],
    });
    expect(payload.sub).toBe('alice');
    expect(protectedHeader.typ).toBe('at+jwt');
  });

  it('dev-token refuses to run outside development mode', async () => {
    const cli = runTs('src/cli/broker.ts', ['dev-token', '--user', 'alice'], { ...env, NODE_ENV: 'test' });
    const prod = runTs('src/cli/broker.ts', ['dev-token', '--user', 'alice'], { ...env, NODE_ENV: 'production' });
    expect((await cli.exited).code).toBe(2);
    expect(cli.output()).toContain('only in development mode');
    expect((await prod.exited).code).toBe(2);
    expect(prod.output()).toContain('Invalid configuration');
  });

  it('stops on SIGINT (Ctrl-C) too, leaving no process or open port', async () => {
    const running = started.find((p) => p.child.exitCode === null && p.output().includes('is running'))!;
    running.child.kill('SIGINT');
    expect(await running.exited).toEqual({ code: 0, signal: null });
    for (const port of ports) expect(await isPortClosed(port)).toBe(true);
    expect(postgresRunning()).toBe(false);
  });

  it('after a broker killed with SIGKILL, the next start stops the Postgres it left behind and starts', async () => {
    const killed = start();
    await killed.waitFor('Connect Broker is running.');
    killed.child.kill('SIGKILL');
    await killed.exited;
    // Postgres has its own process group (so Ctrl-C reaches it only through the broker): it is still up.
    expect(postgresRunning()).toBe(true);
    const next = start();
    await next.waitFor('Connect Broker is running.');
    expect(next.output()).toContain('stopping the embedded Postgres a previous broker left running');
    next.child.kill('SIGTERM');
    expect(await next.exited).toEqual({ code: 0, signal: null });
    expect(postgresRunning()).toBe(false);
  });
});
