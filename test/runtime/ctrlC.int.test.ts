import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runningEmbeddedPostgresUrl } from '../../src/db/embeddedPostgres.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { freePorts, isPortClosed, runNpm, runTs, type BrokerProcess } from '../support/brokerProcess.js';
import { meta } from '../support/mcpWire.js';
import { URL_CAPS } from '../support/connectFlow.js';

// Ctrl-C in a terminal sends SIGINT to the whole foreground process group:
// npm, sh, the broker's node and (unless it has its own group) Postgres, all
// at once, and wrappers forward theirs to their child as well.
describe('Ctrl-C to the process group of npm start', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let ports: number[];
  let npm: BrokerProcess;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'broker-ctrlc-'));
    await chmod(dataDir, 0o711);
    ports = await freePorts(4);
    // The retry below waits RETRY_WAIT_MS for a connection that never comes: a request held in flight.
    env = {
      DATA_DIR: dataDir,
      PORT: String(ports[0]),
      DEV_IDP_PORT: String(ports[1]),
      DEV_REPORTS_PORT: String(ports[2]),
      DEV_GITHUB_PORT: String(ports[3]),
      RETRY_WAIT_MS: '4000',
      LOG_LEVEL: 'info',
      npm_config_update_notifier: 'false',
    };
  });
  afterAll(async () => {
    if (npm?.child.pid && groupMembers(npm.child.pid).length > 0) process.kill(-npm.child.pid, 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('does not take the forwarded copies of one SIGINT for a second one: the request in flight gets its real answer', async () => {
    npm = runNpm(['start'], env, { detached: true });
    await npm.waitFor('Press Ctrl-C to stop.');
    const fetch = createFetch({ extraCaPems: [await readFile(join(dataDir, 'tls', 'ca.pem'), 'utf8')] });
    const cli = runTs('src/cli/broker.ts', ['dev-token', '--user', 'alice'], env);
    expect((await cli.exited).code).toBe(0);
    const token = cli.output().trim().split('\n').at(-1)!;
    let id = 1;
    const call = async (extra: Record<string, unknown>) => {
      const response = await fetch(`https://127.0.0.1:${ports[0]}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'reports_create',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: id++,
          method: 'tools/call',
          params: {
            name: 'reports_create',
            arguments: { title: 'Q4', body: 'held in flight' },
            ...extra,
            _meta: meta(URL_CAPS),
          },
        }),
      });
      return {
        status: response.status,
        body: (await response.json()) as { result?: { resultType?: string; requestState?: string } },
      };
    };
    const first = await call({});
    expect(first.body.result?.resultType).toBe('input_required');

    const retry = call({
      requestState: first.body.result!.requestState,
      inputResponses: { connect: { action: 'accept' } },
    }).then((r) => ({ ...r, logAtAnswer: npm.output() }));
    // The retry recorded the host's accept and now waits for the user's connection.
    const db = new pg.Client({
      connectionString: (await runningEmbeddedPostgresUrl(join(dataDir, 'postgres')))!.reveal(),
    });
    await db.connect();
    for (;;) {
      const { rows } = await db.query<{ status: string }>('SELECT status FROM elicitation_navigations');
      if (rows[0]?.status === 'NAVIGATION_ACCEPTED') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await db.end();

    // The terminal's SIGINT reaches every process of the group; a wrapper that forwards its own
    // copy (npm to its child; the tsx CLI whenever its child has not acknowledged the signal within
    // 30 ms, node_modules/tsx/dist/cli.mjs "relaySignalToChild") makes the broker see it twice
    // within milliseconds. That copy is sent here too, so the test does not depend on load.
    const brokerPid = Number((await readFile(join(dataDir, 'broker.pid'), 'utf8')).trim());
    process.kill(-npm.child.pid!, 'SIGINT');
    process.kill(brokerPid, 'SIGINT');
    const answer = await retry;
    expect(answer.logAtAnswer).toContain('stopping: finishing in-flight requests');
    expect(answer.status).toBe(200);
    expect(answer.body.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    expect(answer.body.result?.requestState).not.toBe(first.body.result?.requestState);

    await npm.exited;
    expect(npm.output()).toContain('"msg":"stopped"');
    expect(npm.output()).not.toContain('exiting now');
    expect(npm.output()).not.toContain('"level":50');
    expect(groupMembers(npm.child.pid!)).toEqual([]);
    for (const port of ports) expect(await isPortClosed(port)).toBe(true);
    expect(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })).not.toContain(join(dataDir, 'postgres'));
  }, 90_000);

  it('stops the broker, gracefully, when only npm gets SIGTERM (a process manager signalling its child)', async () => {
    npm = runNpm(['start'], env, { detached: true });
    await npm.waitFor('Press Ctrl-C to stop.');
    const brokerPid = Number((await readFile(join(dataDir, 'broker.pid'), 'utf8')).trim());
    // npm forwards SIGINT and SIGTERM to its child; a shell between the two would swallow it and
    // leave the broker running without its parent (the start script execs node).
    process.kill(npm.child.pid!, 'SIGTERM');
    await npm.exited;
    for (let i = 0; i < 100 && isAlive(brokerPid); i++) await new Promise((r) => setTimeout(r, 100));
    expect(isAlive(brokerPid)).toBe(false);
    expect(npm.output()).toContain('"msg":"stopped"');
    expect(groupMembers(npm.child.pid!)).toEqual([]);
    for (const port of ports) expect(await isPortClosed(port)).toBe(true);
  }, 90_000);
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes still alive in the process group `pgid`. */
function groupMembers(pgid: number): string[] {
  return execFileSync('ps', ['-eo', 'pgid=,pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.trim().split(/\s+/)[0] === String(pgid));
}
