import type { Queryable } from '../db/pool.js';
import { acceptedStates } from '../flow/navigationStates.js';

// The release gates' figures that are not a flow's timeline: an operation accepted more than once,
// and third-party tokens found outside the vault. SELECT only.

const ACCEPTED = Object.values(acceptedStates);
/** The vault: the one table where a third-party token may rest (sealed). */
const VAULT_TABLES = ['secrets'];

/**
 * Operations accepted more than once, across every lineage and instance: flows holding more than
 * one operation receipt, plus flows the ledger moved into an accepted state more than once. The
 * UNIQUE operation key makes the first impossible by construction; the ledger is the independent
 * witness of the second.
 */
export async function countAcceptedMoreThanOnce(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT (SELECT count(*) FROM (SELECT navigation_id FROM operation_receipts
                                    GROUP BY navigation_id HAVING count(*) > 1) r)
          + (SELECT count(*) FROM (SELECT navigation_id FROM navigation_events
                                    WHERE to_status = ANY($1) AND from_status <> to_status
                                    GROUP BY navigation_id HAVING count(*) > 1) e) AS n`,
    [ACCEPTED],
  );
  return Number(rows[0]!.n);
}

export interface TokenScan {
  /** How many tables were read. */
  tables: number;
  /** Rows, in every table but the vault, whose text holds one of the tokens. */
  found: { table: string; rows: number }[];
}

/**
 * Every row of every table of the current schema but the vault, read as text (`t::text`, all its
 * columns, JSON included), searched for each token. Tokens are matched as substrings, so one that
 * is logged, put in a ledger entry's evidence or kept in a column by mistake is found wherever it
 * sits. A full read of the database: a release check, not something to run on every request.
 */
export async function scanForTokens(db: Queryable, tokens: readonly string[]): Promise<TokenScan> {
  const needles = [...new Set(tokens.filter((t) => t.length >= 8))];
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema() AND c.relname <> ALL($1)
      ORDER BY c.relname`,
    [VAULT_TABLES],
  );
  const found: TokenScan['found'] = [];
  if (needles.length === 0) return { tables: tables.length, found };
  for (const { name } of tables) {
    // The name comes from pg_class, quoted as an identifier; the tokens are parameters.
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${name.replace(/"/g, '""')}" t
        WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) AS k WHERE strpos(t::text, k) > 0)`,
      [needles],
    );
    const n = Number(rows[0]!.n);
    if (n > 0) found.push({ table: name, rows: n });
  }
  return { tables: tables.length, found };
}
