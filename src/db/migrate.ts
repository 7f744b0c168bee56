import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool, Queryable } from './pool.js';
import { inTransaction } from './transaction.js';

// Why not a library: postgres-migrations finds its table by name in every
// schema (breaking schema-per-test isolation), polls its lock once a second
// and is unmaintained since 2021; node-pg-migrate keeps no checksums, so it
// cannot refuse an edited migration. This file is the whole runner.

export const migrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));

export interface MigrationFile {
  id: number;
  name: string;
  sql: string;
  sha256: string;
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

const FILE_PATTERN = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** Reads `NNNN_name.sql` files in order; ids must run 1, 2, 3… without gaps. */
export async function readMigrations(dir: string = migrationsDir): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const files: MigrationFile[] = [];
  for (const [index, fileName] of names.entries()) {
    const match = FILE_PATTERN.exec(fileName);
    if (!match) throw new MigrationError(`${fileName}: migration files are named NNNN_snake_name.sql`);
    if (Number(match[1]) !== index + 1) throw new MigrationError(`${fileName}: expected migration number ${index + 1}`);
    const sql = await readFile(join(dir, fileName), 'utf8');
    files.push({ id: index + 1, name: fileName, sql, sha256: createHash('sha256').update(sql).digest('hex') });
  }
  return files;
}

interface AppliedRow {
  id: number;
  name: string;
  sha256: string;
}

/**
 * Applies pending migrations, each in its own transaction, while holding a
 * session-level advisory lock scoped to the current schema, so concurrent
 * runners apply each migration exactly once. Refuses to run if an applied
 * migration was edited; migrations newer than this code (a rolling deploy's, applied before this
 * instance is replaced) are left alone and named to `onNewer`.
 */
export async function migrate(
  pool: Pool,
  dir: string = migrationsDir,
  onNewer?: (names: string[]) => void,
): Promise<string[]> {
  const files = await readMigrations(dir);
  const client = await pool.connect();
  try {
    // Serialises runners against one schema; released below or when the connection ends.
    await client.query(`SELECT pg_advisory_lock(hashtext('connect-broker.migrate.' || current_schema()))`);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        id integer PRIMARY KEY,
        name text NOT NULL,
        sha256 text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const applied = await appliedMigrations(client);
      checkApplied(files, applied);
      const newer = newerThan(files, applied);
      if (newer.length > 0) onNewer?.(newer.map((row) => row.name));
      const pending = files.filter((f) => !applied.some((a) => a.id === f.id));
      for (const file of pending) {
        await inTransaction(client, async (tx) => {
          await tx.query(file.sql);
          await tx.query('INSERT INTO schema_migrations (id, name, sha256) VALUES ($1, $2, $3)', [
            file.id,
            file.name,
            file.sha256,
          ]);
        });
      }
      return pending.map((f) => f.name);
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtext('connect-broker.migrate.' || current_schema()))`);
    }
  } finally {
    client.release();
  }
}

export interface MigrationStatus {
  /** Every migration this code carries is applied, unedited (newer ones may be applied too: see `ahead`). */
  current: boolean;
  applied: number;
  expected: number;
  /** Applied migrations newer than this code: a rolling deploy's migration step ran before this instance was replaced. */
  ahead: number;
  problem?: string;
}

/** For /readyz: is every migration of this code applied, unedited? */
export async function migrationStatus(db: Queryable, files: MigrationFile[]): Promise<MigrationStatus> {
  const exists = await db.query<{ t: string | null }>(`SELECT to_regclass('schema_migrations')::text AS t`);
  const applied = exists.rows[0]?.t ? await appliedMigrations(db) : [];
  const ahead = newerThan(files, applied).length;
  const known = applied.length - ahead;
  try {
    checkApplied(files, applied);
  } catch (err) {
    return { current: false, applied: known, expected: files.length, ahead, problem: (err as Error).message };
  }
  return { current: known === files.length, applied: known, expected: files.length, ahead };
}

/**
 * Applied migrations past the last one this code carries. A rolling deploy applies the new release's
 * migrations (`broker migrate`) while the old release still serves, so the old code meets them; it keeps
 * serving, as every migration here must leave the release before it working (add, never rename or drop
 * what that release reads, in the same release).
 */
function newerThan(files: readonly MigrationFile[], applied: readonly AppliedRow[]): AppliedRow[] {
  return applied.filter((row) => row.id > files.length);
}

async function appliedMigrations(db: Queryable): Promise<AppliedRow[]> {
  const { rows } = await db.query<AppliedRow>('SELECT id, name, sha256 FROM schema_migrations ORDER BY id');
  return rows;
}

function checkApplied(files: MigrationFile[], applied: AppliedRow[]): void {
  for (const row of applied) {
    // Files run 1..n without gaps (readMigrations), so an id this code lacks is newer: see newerThan.
    const file = files.find((f) => f.id === row.id);
    if (!file) continue;
    if (file.sha256 !== row.sha256 || file.name !== row.name) {
      throw new MigrationError(
        `migration ${file.name} was changed after it was applied (applied ${row.name} sha256 ${row.sha256.slice(0, 12)}…, now ${file.sha256.slice(0, 12)}…); migrations are forward-only: add a new one instead`,
      );
    }
  }
}
