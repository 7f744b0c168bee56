import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts, isPortClosed, runTs, type BrokerProcess } from '../support/brokerProcess.js';

// npm start with another PORT: the banner's commands work as printed. The service records where it
// listens in its data folder (src/runtime/serviceRecord.ts) and the CLI started beside it reads that,
// unless it is given a PORT or a port of its own (it then names another service); once the service
// stops, nothing is read.

/** A PORT whose four neighbours (the development servers npm start puts at PORT+1 to PORT+4) are free too. */
async function portWithNeighbours(): Promise<number> {
  for (let tries = 0; tries < 20; tries++) {
    const [port] = (await freePorts(1)) as [number];
    const next = [1, 2, 3, 4].map((d) => port + d);
    if ((await Promise.all(next.map(isPortClosed))).every(Boolean)) return port;
  }
  throw new Error('no port with four free neighbours');
}

describe('the CLI finds the running development service (any PORT)', () => {
  let dataDir: string;
  let port: number;
  let broker: BrokerProcess;

  const cli = async (args: string[], env: Record<string, string> = {}) => {
    const run = runTs('src/cli/broker.ts', args, { DATA_DIR: dataDir, ...env });
    const { code } = await run.exited;
    return { code, output: run.output() };
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'broker-service-'));
    await chmod(dataDir, 0o711);
    port = await portWithNeighbours();
    broker = runTs('src/main.ts', [], { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' });
    await broker.waitFor('Press Ctrl-C to stop.', 90_000);
  }, 120_000);
  afterAll(async () => {
    if (broker.child.exitCode === null) broker.child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('prints every development server, and the folder the database really is in', async () => {
    const out = broker.output();
    expect(out).toContain(`Upstream MCP server        https://127.0.0.1:${port + 4}/`);
    const location = (await readFile(join(dataDir, 'postgres', 'location'), 'utf8').catch(() => '')).trim();
    expect(out).toContain(`embedded Postgres, data in ${location || join(dataDir, 'postgres')}`);
  });

  it("the banner's commands work as printed: a token for this service, its upstream at PORT+4", async () => {
    const token = await cli(['dev-token', '--user', 'alice']);
    expect(token.code, token.output).toBe(0);
    const jwt = token.output.split('\n').find((line) => line.split('.').length === 3)!;
    expect(decodeJwt(jwt).aud).toBe(`https://127.0.0.1:${port}/mcp`);
    const upstreams = await cli(['upstreams', 'list']);
    expect(upstreams.code, upstreams.output).toBe(0);
    expect(upstreams.output).toContain(`https://127.0.0.1:${port + 4}/`);
  });

  it('a command given its own PORT names another service: nothing is read from the record', async () => {
    const elsewhere = await cli(['dev-token', '--user', 'alice'], { PORT: String(port + 100) });
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.output).toContain(`Could not get a token from https://127.0.0.1:${port + 101}`);
  });

  it('once the service stops its record is gone, and a record left by a dead process is not read', async () => {
    broker.child.kill('SIGTERM');
    expect((await broker.exited).code).toBe(0);
    expect(existsSync(join(dataDir, 'service.json'))).toBe(false);
    const stopped = await cli(['dev-token', '--user', 'alice']);
    expect(stopped.code).toBe(2);
    expect(stopped.output).toContain('Could not get a token from https://127.0.0.1:8444');
    // A crash (kill -9) leaves the file: its process is gone, so it names nothing.
    await writeFile(join(dataDir, 'service.json'), JSON.stringify({ pid: 2 ** 22 - 1, PORT: String(port) }));
    const stale = await cli(['dev-token', '--user', 'alice']);
    expect(stale.output).toContain('Could not get a token from https://127.0.0.1:8444');
  });
});
