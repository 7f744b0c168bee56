import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Config } from '../config/config.js';
import { runningEmbeddedPostgresUrl } from '../db/embeddedPostgres.js';
import { createPool } from '../db/pool.js';
import { verifyChain } from '../ledger/ledgerRepo.js';
import { createLogger } from '../shared/logger.js';
import type { Secret } from '../shared/secret.js';

export class LedgerCommandError extends Error {}

const usage = `Usage: broker ledger verify [--json]

  verify   Recompute the ledger's hash chain and name the first broken link.
           Exit 0 when intact, 1 when broken.
`;

async function databaseUrl(config: Readonly<Config>): Promise<Secret> {
  if (config.db.url) return config.db.url;
  const embedded = config.mode === 'production' ? undefined : await runningEmbeddedPostgresUrl(join(config.dataDir, 'postgres'));
  if (!embedded) throw new LedgerCommandError('No database: set DATABASE_URL, or start the development server (npm start) so its embedded Postgres is running.');
  return embedded;
}

/** `broker ledger …`: returns the process exit code. */
export async function ledgerCommand(args: string[], config: Readonly<Config>, out: (line: string) => void): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'verify') throw new LedgerCommandError(usage);
  const { values } = parseArgs({ args: rest, options: { json: { type: 'boolean', default: false } }, strict: true });
  const pool = createPool({ url: await databaseUrl(config), poolMax: 1 }, createLogger({ level: 'silent' }));
  try {
    const result = await verifyChain(pool);
    if (values.json) out(JSON.stringify({ intact: !result.firstBreak, rows: result.rows, firstBreak: result.firstBreak ?? null }));
    else if (!result.firstBreak) out(`Ledger intact: ${result.rows} rows, every hash chained.`);
    else {
      const b = result.firstBreak;
      const why = { hash: 'the row was altered after it was written', gap: 'the row before it is missing', link: 'it names another row as its predecessor' }[b.reason];
      out(`Ledger BROKEN at chain position ${b.chainSeq} (event id ${b.id}, navigation ${b.navigationId}): ${why}.`);
    }
    return result.firstBreak ? 1 : 0;
  } finally {
    await pool.end();
  }
}
