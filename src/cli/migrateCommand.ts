import { parseArgs } from 'node:util';
import type { Config } from '../config/config.js';
import { migrate, MigrationError, migrationStatus, readMigrations } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { createLogger } from '../shared/logger.js';
import { databaseUrl } from './deployment.js';
import { CliError } from './cliError.js';

export class MigrateCommandError extends CliError {}

const usage = `Usage: broker migrate [--check]

  Applies the migrations this code carries that the database lacks, each once, under the same
  advisory lock a starting instance takes, so it is safe beside running instances. Run it before
  a rollout (a Kubernetes Job, a deploy step): instances then start on a current schema.
  --check   Applies nothing: lists what is pending; exit 1 when something is.
  Uses DATABASE_DIRECT_URL, else DATABASE_URL (a session of its own: not through a transaction-mode
  pooler). Needs no operator token: the database's credentials are the authority.
`;

/** `broker migrate [--check]`: the documented migration step. Exit 0 when the schema is current. */
export async function migrateCommand(
  args: string[],
  config: Readonly<Config>,
  out: (line: string) => void,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { check: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help || positionals[0] === 'help') {
    out(usage);
    return 0;
  }
  if (positionals.length > 0) throw new MigrateCommandError(`Unknown argument: ${positionals[0]}\n\n${usage}`);
  const pool = createPool({ url: await databaseUrl(config), poolMax: 1 }, createLogger({ level: 'silent' }));
  try {
    const files = await readMigrations();
    if (values.check) {
      const status = await migrationStatus(pool, files);
      if (status.problem) throw new MigrateCommandError(status.problem);
      const pending = files.slice(status.applied).map((f) => f.name);
      out(
        pending.length === 0 ? `Up to date: ${status.applied} migrations applied.` : `Pending: ${pending.join(', ')}`,
      );
      return pending.length === 0 ? 0 : 1;
    }
    const applied = await migrate(pool);
    out(
      applied.length === 0
        ? `Up to date: ${files.length} migrations applied, nothing to do.`
        : `Applied ${applied.length}: ${applied.join(', ')}`,
    );
    return 0;
  } catch (err) {
    if (err instanceof MigrationError) throw new MigrateCommandError(err.message);
    throw err;
  } finally {
    await pool.end();
  }
}
