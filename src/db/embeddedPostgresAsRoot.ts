import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, cp, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rename, rm, stat } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import type { Logger } from '../shared/logger.js';

// Postgres refuses to run as root, so as root it runs as the system `postgres`
// user. That user must be able to execute the binaries and reach the cluster,
// which a checkout inside a folder only root can enter (a clone in /root, any
// `mktemp -d`) does not allow. This file finds places it can reach, in the
// temp folder, and checks that nobody but root could have prepared them.

export interface Owner {
  uid: number;
  gid: number;
}

export interface Binaries {
  initdb: string;
  postgres: string;
}

/** The `postgres` user when we are root (Postgres' own rule), else undefined: run as ourselves. */
export function runAsOwner(): Owner | undefined {
  if (userInfo().uid !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch (cause) {
    throw new Error(
      'Running as root: embedded Postgres needs a `postgres` system user to run as (useradd postgres), or set DATABASE_URL',
      { cause },
    );
  }
}

/** The first folder above `path` that `owner` cannot traverse (no o+x and not theirs), if any. */
export async function closedAncestor(path: string, owner: Owner): Promise<string | undefined> {
  for (let current = dirname(resolve(path)); ; current = dirname(current)) {
    const info = await stat(current).catch(() => undefined);
    if (info !== undefined && (info.mode & 0o001) === 0 && info.uid !== owner.uid) return current;
    if (current === dirname(current)) return undefined;
  }
}

/**
 * The cluster folder: the requested one if `owner` can reach it, else one in
 * the temp folder keyed by the requested path (the caller records where, so
 * the CLI finds it). Nothing outside the cluster folder is ever chmod-ed.
 */
export async function reachableDir(
  requested: string,
  owner: Owner,
  logger: Logger,
  temp: string = tmpdir(),
): Promise<string> {
  const dir = resolve(requested);
  const closed = await closedAncestor(dir, owner);
  if (closed === undefined) return dir;
  const fallback = join(
    await reachableTemp(temp, owner, closed),
    `connect-broker-pg-${createHash('sha256').update(dir).digest('hex').slice(0, 12)}`,
  );
  await ownedDir(fallback, 0o711);
  logger.warn(
    { requested: dir, using: fallback, closed },
    'running as root: the postgres user cannot reach the data folder, so the embedded cluster lives in the temp folder',
  );
  return fallback;
}

/**
 * initdb and postgres as `owner` can execute them: the package's own files
 * when reachable, else a copy of its `native` folder (binaries, libraries,
 * share) in the temp folder, named by the package version and a digest of
 * its file list (path, type, size, mode, link target). An existing copy is
 * used only if it is root's, writable by nobody else, and matches that list.
 */
export async function executableBinaries(
  bin: Binaries,
  owner: Owner,
  logger: Logger,
  temp: string = tmpdir(),
): Promise<Binaries> {
  const native = dirname(dirname(bin.postgres)); // <package>/native/bin/postgres
  const closed = await closedAncestor(bin.postgres, owner);
  if (closed === undefined) return bin;
  const { version } = JSON.parse(await readFile(join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const manifest = await fileList(native);
  const digest = createHash('sha256').update(`${version}\n${manifest}`).digest('hex').slice(0, 16);
  const copy = join(await reachableTemp(temp, owner, closed), `connect-broker-postgres-${version}-${digest}`);
  const moved = (b: string) => join(copy, relative(native, b));
  const result = { initdb: moved(bin.initdb), postgres: moved(bin.postgres) };
  const found = await copyState(copy, manifest);
  if (found === 'intact') return result;
  // Copies are renamed into place whole, so a damaged one is not another broker's copy in progress.
  if (found === 'damaged') await rm(copy, { recursive: true, force: true });
  const staging = await mkdtemp(join(dirname(copy), 'connect-broker-postgres-staging-'));
  try {
    await cp(native, staging, { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false });
    await ownedDir(staging, 0o755);
    await rename(staging, copy).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err; // another broker was faster
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  if ((await copyState(copy, manifest)) !== 'intact')
    throw new Error(`The copy of the Postgres binaries in ${copy} does not match ${native}; remove it and start again`);
  logger.info(
    { from: native, to: copy, closed },
    'running as root: the postgres user cannot reach node_modules, so the Postgres binaries run from a copy in the temp folder',
  );
  return result;
}

async function copyState(copy: string, manifest: string): Promise<'absent' | 'intact' | 'damaged'> {
  if (!(await lstat(copy).catch(() => undefined))) return 'absent';
  return (await fileList(copy, { rootOnly: true }).catch(() => undefined)) === manifest ? 'intact' : 'damaged';
}

/** One line per entry under `dir`, sorted. With rootOnly, any entry not root's or writable by others throws. */
async function fileList(dir: string, options: { rootOnly?: boolean } = {}): Promise<string> {
  const lines: string[] = [];
  const walk = async (path: string): Promise<void> => {
    const info = await lstat(path);
    if (options.rootOnly && (info.uid !== 0 || (!info.isSymbolicLink() && (info.mode & 0o022) !== 0)))
      throw new Error(`${path} is not root's alone`);
    const name = relative(dir, path) || '.';
    if (info.isSymbolicLink()) lines.push(`l ${name} -> ${await readlink(path)}`);
    else if (info.isFile()) lines.push(`f ${name} ${info.size} ${(info.mode & 0o777).toString(8)}`);
    else if (info.isDirectory()) {
      if (name !== '.') lines.push(`d ${name}`);
      for (const entry of (await readdir(path)).sort()) await walk(join(path, entry));
    } else throw new Error(`${path} is not a file, folder or link`);
  };
  await walk(dir);
  return lines.join('\n');
}

// The temp folder, if the postgres user can reach it; otherwise nothing will work: say what to do.
async function reachableTemp(temp: string, owner: Owner, closed: string): Promise<string> {
  const tempClosed = await closedAncestor(join(resolve(temp), 'entry'), owner);
  if (tempClosed !== undefined) {
    throw new Error(
      `Running as root, embedded Postgres runs as the postgres user, who cannot enter ${closed} nor ${tempClosed} (the temp folder). ` +
        'Set TMPDIR to a folder every user can traverse (such as /tmp), move the checkout and DATA_DIR out of the closed folder, or set DATABASE_URL.',
    );
  }
  return resolve(temp);
}

/** Creates `path` (or takes it as it is) only if it is a folder of root's that nobody else can write. */
async function ownedDir(path: string, mode: number): Promise<void> {
  await mkdir(path, { mode }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const info = await lstat(path);
  if (!info.isDirectory() || info.uid !== 0 || (info.mode & 0o022) !== 0) {
    throw new Error(`${path} exists but is not a folder of root's that only root can write; remove it and start again`);
  }
  await chmod(path, mode);
}
