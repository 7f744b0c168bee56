import { WINDOW_ORDER, type DeclaredRuns } from './declaredBench.js';
import type { LoadResult } from './load.js';
import { formatColumns } from './report.js';
import { BENCH_ISSUE } from './wire.js';

// The declared tool beside its defineConnectionTool twin, side by side, and
// what declaring costs. The target: a declared tool costs at most 10 % more
// per call than the same call written in TypeScript.

export const OVERHEAD_TARGET_PERCENT = 10;

export interface Combined {
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerCall: number;
  calls: number;
  errors: number;
}

// Calls and CPU add up over the windows; a window's percentiles do not, so they are averaged.
function combine(windows: readonly LoadResult[]): Combined {
  const calls = windows.reduce((sum, w) => sum + w.requests, 0);
  const seconds = windows.reduce((sum, w) => sum + w.seconds, 0);
  const mean = (pick: (w: LoadResult) => number) =>
    windows.reduce((sum, w) => sum + pick(w), 0) / Math.max(1, windows.length);
  return {
    callsPerSecond: calls / seconds,
    p50Ms: mean((w) => w.p50Ms),
    p99Ms: mean((w) => w.p99Ms),
    cpuUsPerCall: windows.reduce((sum, w) => sum + w.serverCpuUsPerRequest * w.requests, 0) / Math.max(1, calls),
    calls,
    errors: windows.reduce((sum, w) => sum + w.errors, 0),
  };
}

/** Each window as it ran, so the spread a busy machine causes is seen beside the averages. */
function windowsInOrder(runs: DeclaredRuns): string {
  const next = { coded: 0, declared: 0 };
  return WINDOW_ORDER.map((caseName) => {
    const kind = caseName.endsWith('coded') ? 'coded' : 'declared';
    const w = runs[kind][next[kind]++];
    return w ? `${kind === 'coded' ? 'C' : 'D'} ${w.requestsPerSecond.toFixed(0)}/${w.p99Ms.toFixed(0)}` : '';
  }).join(', ');
}

const percent = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(1)} %`;

/** Each tool over its windows, and the time a declared call takes beyond the coded one, in %. */
export function declaredFigures(runs: DeclaredRuns): { coded: Combined; declared: Combined; overheadPercent: number } {
  const coded = combine(runs.coded);
  const declared = combine(runs.declared);
  // From throughput (closed loop: calls/s is 1 / time per call).
  return { coded, declared, overheadPercent: (coded.callsPerSecond / declared.callsPerSecond - 1) * 100 };
}

export function formatDeclaredReport(runs: DeclaredRuns, connections: number, seconds: number): string {
  const { coded, declared, overheadPercent: overhead } = declaredFigures(runs);
  const header = ['tool', 'made with', 'calls/s', 'p50 ms', 'p99 ms', 'CPU µs/call', 'calls', 'errors'];
  const row = (name: string, madeWith: string, c: Combined) => [
    name,
    madeWith,
    c.callsPerSecond.toFixed(0),
    c.p50Ms.toFixed(2),
    c.p99Ms.toFixed(2),
    c.cpuUsPerCall.toFixed(0),
    String(c.calls),
    String(c.errors),
  ];
  const rows = [
    row('github_issue_coded', 'defineConnectionTool', coded),
    row('github_issue_declared', 'TOOLS_FILE', declared),
  ];
  const cpuOverhead = (declared.cpuUsPerCall / coded.cpuUsPerCall - 1) * 100;
  const p99Overhead = (declared.p99Ms / coded.p99Ms - 1) * 100;
  return [
    `declared tool vs defineConnectionTool: tools/call reading ${BENCH_ISSUE.owner}/${BENCH_ISSUE.repo}#${BENCH_ISSUE.number} at the GitHub-like provider, ${connections} connections,`,
    `${runs.coded.length + runs.declared.length} windows of ${seconds} s after a warm-up (${WINDOW_ORDER.map((c) => (c.endsWith('coded') ? 'C' : 'D')).join('')}: C coded, D declared), percentiles averaged over a tool's windows`,
    '',
    ...formatColumns(header, rows),
    '',
    `windows in order (calls/s, p99 ms): ${windowsInOrder(runs)}`,
    `declared overhead: ${percent(overhead)} time per call (from calls/s; target ≤ ${OVERHEAD_TARGET_PERCENT} %) ${overhead <= OVERHEAD_TARGET_PERCENT ? 'PASS' : 'MISS'}; p99 ${percent(p99Overhead)}; CPU per call ${percent(cpuOverhead)}`,
  ].join('\n');
}
