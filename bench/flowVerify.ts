import type { Pool } from '../src/db/pool.js';
import type { Fetch } from '../src/shared/httpClient.js';
import type { FlowResult } from './flowDriver.js';
import { callTool } from './flowMcp.js';

export interface Verification {
  flows: number;
  /** Flows that ended in a created report. */
  completed: number;
  /** Reports at the Report Service with this run's titles, and receipts in the broker. */
  reports: number;
  receipts: number;
  succeededReceipts: number;
  /** Flow titles with no report, and titles with more than one report or receipt. */
  lost: string[];
  doubled: string[];
  /** Reports whose id is not the one the flow's retry answered. */
  mismatched: string[];
  navigationsByStatus: Record<string, number>;
  problems: string[];
  ok: boolean;
}

export interface VerifyDeps {
  pool: Pool;
  fetch: Fetch;
  brokerUrl: string;
  tokens: ReadonlyMap<string, string>;
}

/**
 * After the run: every flow's title must name exactly one report at the
 * Report Service (listed through the broker's reports_list, as each user) and
 * exactly one succeeded operation receipt, whose report is the one the retry
 * answered; nothing else may carry this run's prefix.
 */
export async function verifyFlows(deps: VerifyDeps, results: readonly FlowResult[], prefix: string): Promise<Verification> {
  const problems: string[] = [];
  const reportsByTitle = new Map<string, string[]>();
  for (const login of deps.tokens.keys()) {
    try {
      for (const report of await listReports(deps, login)) {
        if (report.title.startsWith(prefix)) reportsByTitle.set(report.title, [...(reportsByTitle.get(report.title) ?? []), report.id]);
      }
    } catch (err) {
      problems.push(`could not list ${login}'s reports: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const receipts = await deps.pool.query<{ title: string | null; outcome_status: string }>("SELECT outcome->'report'->>'title' AS title, outcome_status FROM operation_receipts");
  const receiptsByTitle = new Map<string, number>();
  for (const r of receipts.rows) receiptsByTitle.set(r.title ?? '(no report)', (receiptsByTitle.get(r.title ?? '(no report)') ?? 0) + 1);
  const statuses = await deps.pool.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM elicitation_navigations GROUP BY status ORDER BY status');

  const titles = new Set(results.map((r) => r.title));
  const lost = results.filter((r) => (reportsByTitle.get(r.title)?.length ?? 0) === 0).map((r) => r.title);
  const doubled = [...titles].filter((t) => (reportsByTitle.get(t)?.length ?? 0) > 1 || (receiptsByTitle.get(t) ?? 0) > 1);
  const mismatched = results.filter((r) => r.reportId !== undefined && reportsByTitle.get(r.title)?.[0] !== r.reportId).map((r) => r.title);
  const strays = [...reportsByTitle.keys()].filter((t) => !titles.has(t));
  if (strays.length > 0) problems.push(`reports no flow asked for: ${strays.slice(0, 5).join(', ')}`);
  const reports = [...reportsByTitle.values()].reduce((n, ids) => n + ids.length, 0);
  const succeededReceipts = receipts.rows.filter((r) => r.outcome_status === 'succeeded').length;
  const completed = results.filter((r) => r.failure === undefined).length;
  if (reports !== results.length) problems.push(`${reports} reports for ${results.length} flows`);
  if (receipts.rows.length !== results.length || succeededReceipts !== results.length) problems.push(`${receipts.rows.length} operation receipts (${succeededReceipts} succeeded) for ${results.length} flows`);
  return {
    flows: results.length,
    completed,
    reports,
    receipts: receipts.rows.length,
    succeededReceipts,
    lost,
    doubled,
    mismatched,
    navigationsByStatus: Object.fromEntries(statuses.rows.map((s) => [s.status, s.n])),
    problems,
    ok: completed === results.length && lost.length === 0 && doubled.length === 0 && mismatched.length === 0 && problems.length === 0,
  };
}

async function listReports(deps: VerifyDeps, login: string): Promise<{ id: string; title: string }[]> {
  const result = await callTool(deps, deps.tokens.get(login)!, 'reports_list', {}, {}, {});
  const reports = (result['structuredContent'] as { reports?: { id: string; title: string }[] } | undefined)?.reports;
  if (result['resultType'] !== 'complete' || !reports) throw new Error(`reports_list answered ${JSON.stringify(result).slice(0, 200)}`);
  return reports;
}
