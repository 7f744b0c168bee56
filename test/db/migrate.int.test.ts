import { cp, mkdtemp, readdir, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, migrationsDir, migrationStatus, readMigrations } from '../../src/db/migrate.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

describe('migrate', () => {
  let db: TestDb;
  let dir: string;

  beforeAll(async () => {
    db = await createTestDb({ migrate: false });
    dir = await mkdtemp(join(tmpdir(), 'broker-migrations-'));
    await cp(migrationsDir, dir, { recursive: true });
  });
  afterAll(async () => {
    await db.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('applies every migration once, and nothing on a second run', async () => {
    const files = await readMigrations(dir);
    expect(await migrate(db.pool, dir)).toEqual(files.map((f) => f.name));
    expect(await migrate(db.pool, dir)).toEqual([]);
    const { rows } = await db.pool.query('SELECT id, name, sha256 FROM schema_migrations ORDER BY id');
    expect(rows).toEqual(files.map((f) => ({ id: f.id, name: f.name, sha256: f.sha256 })));
    expect(await migrationStatus(db.pool, files)).toMatchObject({ current: true });
  });

  it('applies each migration exactly once when two runners start at the same time', async () => {
    const next = String((await readdir(dir)).filter((f) => f.endsWith('.sql')).length + 1).padStart(4, '0');
    // A slow migration widens the window in which a second runner could slip in.
    await writeFile(
      join(dir, `${next}_probe.sql`),
      'SELECT pg_sleep(0.3); CREATE TABLE probe (id int); INSERT INTO probe VALUES (1);',
    );
    // Their lock is a session's: through a transaction-mode pooler both go straight to Postgres, as the broker's do.
    const other = db.newDirectPool() ?? db.newPool();
    const [a, b] = await Promise.all([migrate(db.newDirectPool() ?? db.pool, dir), migrate(other, dir)]);
    expect([...a, ...b]).toEqual([`${next}_probe.sql`]);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM probe');
    expect(rows[0].n).toBe(1);
  });

  it('refuses an edited migration that was already applied, and changes nothing', async () => {
    const files = await readMigrations(dir);
    const first = files[0]!;
    await appendFile(join(dir, first.name), '\n-- edited\n');
    await expect(migrate(db.pool, dir)).rejects.toThrow(/was changed after it was applied/);
    const status = await migrationStatus(db.pool, await readMigrations(dir));
    expect(status.current).toBe(false);
    expect(status.problem).toMatch(first.name);
    const { rows } = await db.pool.query('SELECT sha256 FROM schema_migrations WHERE id = 1');
    expect(rows[0].sha256).toBe(first.sha256);
  });

  it('reports pending migrations as not current', async () => {
    const fresh = await createTestDb({ migrate: false });
    try {
      expect(await migrationStatus(fresh.pool, await readMigrations())).toMatchObject({ current: false, applied: 0 });
    } finally {
      await fresh.drop();
    }
  });

  it('refuses files that are not numbered in order', async () => {
    const bad = await mkdtemp(join(tmpdir(), 'broker-bad-migrations-'));
    await writeFile(join(bad, '0001_a.sql'), 'SELECT 1');
    await writeFile(join(bad, '0003_c.sql'), 'SELECT 1');
    await expect(readMigrations(bad)).rejects.toThrow(/expected migration number 2/);
    await rm(bad, { recursive: true });
  });
});

// A rolling deploy: the new release's migration step (`broker migrate`) runs while the old release
// still serves. The old code must stay ready and able to start: it meets migrations it does not carry.
describe('a database ahead of the code', () => {
  it('is current for the older code, which starts on it and names the newer migrations', async () => {
    const db = await createTestDb({ migrate: false });
    const newer = await mkdtemp(join(tmpdir(), 'broker-newer-migrations-'));
    try {
      await cp(migrationsDir, newer, { recursive: true });
      const next = String((await readMigrations()).length + 1).padStart(4, '0');
      await writeFile(join(newer, `${next}_next_release.sql`), 'CREATE TABLE next_release (id int)');
      await migrate(db.pool, newer);

      const older = await readMigrations();
      expect(await migrationStatus(db.pool, older)).toEqual({
        current: true,
        applied: older.length,
        expected: older.length,
        ahead: 1,
      });
      const named: string[][] = [];
      expect(await migrate(db.pool, migrationsDir, (names) => named.push(names))).toEqual([]);
      expect(named).toEqual([[`${next}_next_release.sql`]]);
    } finally {
      await db.drop();
      await rm(newer, { recursive: true, force: true });
    }
  });
});
