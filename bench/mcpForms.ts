import type { BrokerForm } from './brokerModules.js';
import type { DeclaredRuns } from './declaredBench.js';
import { declaredFigures, OVERHEAD_TARGET_PERCENT } from './declaredReport.js';
import { formatFormComparison, type FormRow } from './formReport.js';
import type { LoadResult } from './load.js';
import { RATIO_TARGET, P99_TARGET_MS } from './report.js';
import type { UpstreamRuns } from './upstreamBench.js';
import { ADDED_P50_TARGET_MS, THROUGHPUT_SHARE_TARGET } from './upstreamReport.js';
import { CASES, type PeerCaseName } from './wire.js';

// bench:mcp's figures of the tsx broker beside the compiled one's: every row the bench
// measures on the broker, and each target computed for both forms.

export interface McpFormRuns {
  /** Per case: each form's broker window, and the peer's. */
  cases: Record<PeerCaseName, Record<BrokerForm | 'peer', LoadResult>>;
  declared: Record<BrokerForm, DeclaredRuns>;
  upstream: Record<BrokerForm, UpstreamRuns>;
}

const both = (pick: (form: BrokerForm) => number) => ({ tsx: pick('tsx'), compiled: pick('compiled') });

export function formatMcpFormComparison(runs: McpFormRuns, connections: number, seconds: number): string {
  const rows: FormRow[] = [];
  for (const caseName of CASES) {
    const r = runs.cases[caseName];
    rows.push(
      { target: `${caseName} req/s`, ...both((f) => r[f].requestsPerSecond), digits: 0, better: 'higher' },
      { target: `${caseName} p50`, ...both((f) => r[f].p50Ms), digits: 2, unit: ' ms', better: 'lower' },
      { target: `${caseName} p99 (target < ${P99_TARGET_MS} ms)`, ...both((f) => r[f].p99Ms), digits: 2, unit: ' ms' },
      { target: `${caseName} CPU µs/req`, ...both((f) => r[f].serverCpuUsPerRequest), digits: 0, better: 'lower' },
      {
        target: `${caseName} broker/peer req/s (target ≥ ${RATIO_TARGET[caseName]}×)`,
        ...both((f) => r[f].requestsPerSecond / r.peer.requestsPerSecond),
        digits: 2,
        unit: '×',
      },
    );
  }
  const declared = { tsx: declaredFigures(runs.declared.tsx), compiled: declaredFigures(runs.declared.compiled) };
  for (const tool of ['coded', 'declared'] as const)
    rows.push(
      {
        target: `github_issue_${tool} calls/s`,
        ...both((f) => declared[f][tool].callsPerSecond),
        digits: 0,
        better: 'higher',
      },
      {
        target: `github_issue_${tool} CPU µs/call`,
        ...both((f) => declared[f][tool].cpuUsPerCall),
        digits: 0,
        better: 'lower',
      },
    );
  rows.push({
    target: `declared overhead (target ≤ ${OVERHEAD_TARGET_PERCENT} %)`,
    ...both((f) => declared[f].overheadPercent),
    digits: 1,
    unit: ' %',
  });
  const up = runs.upstream;
  rows.push(
    {
      target: `memo_list req/s, ${connections} connections`,
      ...both((f) => up[f].proxied.requestsPerSecond),
      digits: 0,
      better: 'higher',
    },
    {
      target: 'memo_list p50, 1 connection',
      ...both((f) => up[f].proxiedAlone.p50Ms),
      digits: 2,
      unit: ' ms',
      better: 'lower',
    },
    {
      target: `memo_list adds at p50, 1 connection (target ≤ ${ADDED_P50_TARGET_MS} ms)`,
      ...both((f) => up[f].proxiedAlone.p50Ms - up[f].directAlone.p50Ms),
      digits: 2,
      unit: ' ms',
    },
    {
      target: `memo_list share of direct req/s (target ≥ ${THROUGHPUT_SHARE_TARGET * 100} %)`,
      ...both((f) => (up[f].proxied.requestsPerSecond / up[f].direct.requestsPerSecond) * 100),
      digits: 0,
      unit: ' %',
    },
  );
  return formatFormComparison(
    [
      `the broker as npm start runs it (src/*.ts through tsx) beside the compiled build (dist/, as the image runs it),`,
      `in turn behind the same listener, database, settings and load: ${seconds} s windows, ${connections} connections unless said;`,
      'per case two windows of each form (tsx, compiled, compiled, tsx), the declared tools eight, alternating;',
      'the peer and memo-direct windows are shared; CPU is this process’s, which holds whichever broker serves',
    ].join('\n'),
    rows,
  );
}
