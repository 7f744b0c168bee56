import { migrationStatus, readMigrations } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { createLogger } from '../shared/logger.js';
import type { Secret } from '../shared/secret.js';
import { fail, ok, reasonOf, warn, type Finding } from './doctorFinding.js';

/** A database URL as it may be printed: no password, no query (a `password=` may hide there). */
export function maskedDatabaseUrl(url: Secret): string {
  const raw = url.reveal();
  if (!URL.canParse(raw)) return '(DATABASE_URL)';
  const parsed = new URL(raw);
  if (parsed.password) parsed.password = '***';
  const query = parsed.search ? '?…' : '';
  parsed.search = '';
  return `${parsed.href}${query}`;
}

/** Connects as the CLI does (past a pooler: DATABASE_DIRECT_URL when set), and compares the migrations with this code's. */
export async function checkDatabase(subject: string, url: Secret): Promise<Finding[]> {
  const shown = maskedDatabaseUrl(url);
  const pool = createPool({ url, poolMax: 1, connectTimeoutMs: 5_000 }, createLogger({ level: 'silent' }));
  try {
    const status = await migrationStatus(pool, await readMigrations());
    const connected = ok(subject, `${shown}: connected`);
    if (status.problem) return [connected, fail(subject, `migrations: ${status.problem}`)];
    if (!status.current)
      return [
        connected,
        warn(
          subject,
          `${status.expected - status.applied} of ${status.expected} migrations pending: broker migrate (or the next start) applies them`,
        ),
      ];
    return [connected, ok(subject, `all ${status.expected} migrations applied`)];
  } catch (err) {
    // Postgres's words name roles and databases, never a password; the URL's is taken out all the same.
    const password = URL.canParse(url.reveal()) ? decodeURIComponent(new URL(url.reveal()).password) : '';
    const reason = reasonOf(err);
    return [fail(subject, `${shown}: ${password ? reason.replaceAll(password, '***') : reason}`)];
  } finally {
    await pool.end();
  }
}
