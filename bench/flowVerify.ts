import type { Pool } from '../src/db/pool.js';
import type { FlowResult } from './flowDriver.js';
import type { FlowService } from './flowServices.js';

export interface Verification {
  flows: number;
  /** Flows that ended in a created report or issue. */
  completed: number;
  /** Reports or issues at the service with this run's titles, and receipts of its tool in the broker. */
  made: number;
  receipts: number;
  succeededReceipts: number;
  /** Flow titles with nothing made, and titles made or receipted more than once. */
  lost: string[];
  doubled: string[];
  /** Titles whose report or issue is not the one the flow's retry answered. */
  mismatched: string[];
  /** The navigations of the service's tool. */
  navigationsByStatus: Record<string, number>;
  problems: string[];
  ok: boolean;
}

export interface VerifyDeps {
  pool: Pool;
  service: FlowService;
  tokens: ReadonlyMap<string, string>;
}

/**
 * After the run: every flow's title must name exactly one report or issue at
 * the service (listed as each user, service.list) and exactly one succeeded
 * operation receipt of its tool, whose report or issue is the one the retry
 * answered; nothing else may carry this run's prefix.
 */
export async function verifyFlows(
  deps: VerifyDeps,
  results: readonly FlowResult[],
  prefix: string,
): Promise<Verification> {
  const { service } = deps;
  const problems: string[] = [];
  const madeByTitle = new Map<string, string[]>();
  for (const [login, token] of deps.tokens) {
    try {
      for (const made of await service.list(login, token)) {
        if (made.title.startsWith(prefix))
          madeByTitle.set(made.title, [...(madeByTitle.get(made.title) ?? []), made.id]);
      }
    } catch (err) {
      problems.push(
        `could not list what ${login} has at ${service.name}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }
  // This run's receipts (bench:scale runs several on one database), and any that made nothing.
  const receipts = await deps.pool.query<{ title: string | null; outcome_status: string }>(
    `SELECT * FROM (SELECT ${service.receiptTitleSql} AS title, r.outcome_status FROM operation_receipts r
       JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.tool = $1) t
     WHERE t.title IS NULL OR starts_with(t.title, $2)`,
    [service.tool, prefix],
  );
  const receiptsByTitle = new Map<string, number>();
  for (const r of receipts.rows)
    receiptsByTitle.set(r.title ?? '(nothing made)', (receiptsByTitle.get(r.title ?? '(nothing made)') ?? 0) + 1);
  const statuses = await deps.pool.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM elicitation_navigations WHERE tool = $1 GROUP BY status ORDER BY status',
    [service.tool],
  );

  const titles = new Set(results.map((r) => r.title));
  const lost = results.filter((r) => (madeByTitle.get(r.title)?.length ?? 0) === 0).map((r) => r.title);
  const doubled = [...titles].filter((t) => (madeByTitle.get(t)?.length ?? 0) > 1 || (receiptsByTitle.get(t) ?? 0) > 1);
  const mismatched = results
    .filter((r) => r.madeId !== undefined && madeByTitle.get(r.title)?.[0] !== r.madeId)
    .map((r) => r.title);
  const strays = [...madeByTitle.keys()].filter((t) => !titles.has(t));
  if (strays.length > 0) problems.push(`made with no flow asking: ${strays.slice(0, 5).join(', ')}`);
  const made = [...madeByTitle.values()].reduce((n, ids) => n + ids.length, 0);
  const succeededReceipts = receipts.rows.filter((r) => r.outcome_status === 'succeeded').length;
  const completed = results.filter((r) => r.failure === undefined).length;
  if (made !== results.length) problems.push(`${made} made at ${service.name} for ${results.length} flows`);
  if (receipts.rows.length !== results.length || succeededReceipts !== results.length)
    problems.push(
      `${receipts.rows.length} operation receipts (${succeededReceipts} succeeded) for ${results.length} flows`,
    );
  return {
    flows: results.length,
    completed,
    made,
    receipts: receipts.rows.length,
    succeededReceipts,
    lost,
    doubled,
    mismatched,
    navigationsByStatus: Object.fromEntries(statuses.rows.map((s) => [s.status, s.n])),
    problems,
    ok:
      completed === results.length &&
      lost.length === 0 &&
      doubled.length === 0 &&
      mismatched.length === 0 &&
      problems.length === 0,
  };
}
