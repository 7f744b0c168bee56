import { percentiles, type Percentiles } from './flowReport.js';
import type { RefreshProviderCounts, ServedRefresh } from './refreshProvider.js';
import type { StormRun } from './refreshStorm.js';
import type { StoredCheck } from './refreshVerify.js';

export interface RefreshFigures {
  connections: number;
  /** From the start of the storm to the answer that renewed the last connection not yet renewed, in ms. */
  stormMs: number | undefined;
  refreshes: number;
  /** Renewed by each instance's proactive refresh; the rest by tool calls. */
  byJob: number[];
  calls: number;
  callSeconds: number;
  failedCalls: string[];
  /** Calls during which the provider answered a refresh of their user's connection. */
  waited: number;
  during: Percentiles;
  after: Percentiles;
  waitedLatency: Percentiles;
  /** Refreshes the provider answered per seeded connection; `renewed`: connections it answered at least one for. */
  perConnection: { min: number; max: number; notOnce: number; renewed: number };
  counts: RefreshProviderCounts;
}

/** The bench's figures from the calls, the provider's record of every refresh it answered and its counters. */
export function figuresOf(
  run: StormRun,
  served: readonly ServedRefresh[],
  counts: RefreshProviderCounts,
  subjects: readonly string[],
): RefreshFigures {
  const perSubject = new Map(subjects.map((s) => [s, 0]));
  let stormEnd: number | undefined;
  for (const s of served) {
    const before = perSubject.get(s.subject) ?? 0;
    perSubject.set(s.subject, before + 1);
    if (before === 0) stormEnd = Math.max(stormEnd ?? 0, s.servedAt);
  }
  const renewedAll = [...perSubject.values()].every((n) => n > 0);
  const stormMs = renewedAll && stormEnd !== undefined ? stormEnd - run.startedAt : undefined;
  const cut = stormEnd ?? Number.POSITIVE_INFINITY;
  const servedOf = new Map<string, number[]>();
  for (const s of served) servedOf.set(s.subject, [...(servedOf.get(s.subject) ?? []), s.servedAt]);
  const waitedCalls = run.calls.filter((c) => (servedOf.get(c.login) ?? []).some((at) => at >= c.start && at <= c.end));
  const latency = (calls: typeof run.calls) => percentiles(calls.map((c) => c.end - c.start));
  const ended = run.calls.map((c) => c.end);
  const counted = [...perSubject.values()];
  return {
    connections: subjects.length,
    stormMs,
    refreshes: served.length,
    byJob: run.jobs.map((j) => j.refreshed),
    calls: run.calls.length,
    callSeconds: ended.length > 0 ? (Math.max(...ended) - run.startedAt) / 1000 : 0,
    failedCalls: run.calls.flatMap((c) => (c.failure === undefined ? [] : [`${c.login}: ${c.failure}`])),
    waited: waitedCalls.length,
    during: latency(run.calls.filter((c) => c.start < cut)),
    after: latency(run.calls.filter((c) => c.start >= cut)),
    waitedLatency: latency(waitedCalls),
    perConnection: {
      min: Math.min(...counted),
      max: Math.max(...counted),
      notOnce: counted.filter((n) => n !== 1).length,
      renewed: counted.filter((n) => n > 0).length,
    },
    counts,
  };
}

const int = (n: number) => n.toLocaleString('en-US');
const ms = (v: number) => (Number.isNaN(v) ? '—' : `${v.toFixed(1)} ms`);
const latency = (p: Percentiles) => `p50 ${ms(p.p50)}, p99 ${ms(p.p99)}, max ${ms(p.max)} (${int(p.n)} calls)`;
const row = (label: string, value: string) => `  ${label.padEnd(36)} ${value}`;
const check = (ok: boolean) => (ok ? 'ok' : 'WRONG');

/** The figures as printed, and every correctness problem found (none: the run is correct). */
export function formatRefreshReport(
  f: RefreshFigures,
  run: StormRun,
  stored: StoredCheck,
): { text: string; problems: string[] } {
  const problems: string[] = [];
  const require = (ok: boolean, problem: string) => {
    if (!ok) problems.push(problem);
    return check(ok);
  };
  const jobProblems = run.jobs.reduce((n, j) => n + j.needsReauth + j.failed + j.thrown, 0);
  const byCalls = f.refreshes - f.byJob.reduce((a, b) => a + b, 0);
  const lines = [
    '',
    row(
      'renewed',
      f.stormMs === undefined
        ? `not all: ${int(f.perConnection.renewed)} of ${int(f.connections)}`
        : `${int(f.connections)} in ${(f.stormMs / 1000).toFixed(2)} s: ${((f.connections / f.stormMs) * 1000).toFixed(1)} refreshes/s`,
    ),
    row(
      '  by',
      `${f.byJob.map((n, i) => `broker ${i + 1}'s proactive refresh ${int(n)}`).join(', ')}, tool calls ${int(byCalls)}`,
    ),
    row(
      '  proactive refresh runs',
      run.jobs
        .map(
          (j, i) =>
            `broker ${i + 1}: ${j.runs} runs, ${int(j.skipped)} skipped (renewed or leased by another), ${j.needsReauth} needs_reauth, ${j.failed} failed, ${j.thrown} threw`,
        )
        .join('; '),
    ),
    row(
      'tool calls',
      `${int(f.calls)} in ${f.callSeconds.toFixed(1)} s (${(f.calls / Math.max(f.callSeconds, 1e-9)).toFixed(0)}/s), ${int(f.failedCalls.length)} failed`,
    ),
    row(
      '  waited for a refresh',
      `${int(f.waited)} (${((f.waited / Math.max(f.calls, 1)) * 100).toFixed(2)} %): ${latency(f.waitedLatency)}`,
    ),
    row('  latency during the storm', latency(f.during)),
    row('  latency after it', f.after.n === 0 ? 'no calls after the storm (raise BENCH_SECONDS)' : latency(f.after)),
    '',
    row(
      'reused refresh tokens',
      `${f.counts.reusedRefreshTokens} (must be 0) ${require(f.counts.reusedRefreshTokens === 0, `${f.counts.reusedRefreshTokens} refresh tokens were used again after they were spent`)}`,
    ),
    row(
      'refreshes per connection',
      `min ${f.perConnection.min}, max ${f.perConnection.max} (must be 1) ${require(f.perConnection.notOnce === 0, `${f.perConnection.notOnce} connections were not refreshed exactly once`)}`,
    ),
    row(
      'failed tool calls',
      `${int(f.failedCalls.length)} (must be 0) ${require(f.failedCalls.length === 0, `${f.failedCalls.length} tool calls failed, e.g. ${f.failedCalls.slice(0, 3).join(' | ')}`)}`,
    ),
    row(
      'other refusals',
      `token endpoint ${f.counts.refusedTokenRequests}, API 401 ${f.counts.apiRefused} (must be 0) ${require(f.counts.refusedTokenRequests + f.counts.apiRefused === 0, 'the provider refused a token request or an API call')}`,
    ),
    row(
      'refresh job problems',
      `${jobProblems} (must be 0) ${require(jobProblems === 0, 'a proactive refresh ended in needs_reauth, failed or threw')}`,
    ),
    row(
      'stored after the storm',
      `${int(stored.settled)} of ${int(stored.connections)} active with the provider's last refresh token ${require(stored.settled === stored.connections, `stored tokens: ${stored.problems.join('; ')}`)}`,
    ),
  ];
  return { text: lines.join('\n'), problems };
}
