import type { FlowsRun } from './flowRun.js';
import { callbackPercentiles, callbackStep, percentiles } from './flowReport.js';
import type { LoopStats } from './loopCaller.js';
import type { Verification } from './flowVerify.js';

export interface LoopRun {
  name: string;
  flows: FlowsRun;
  verification: Verification;
  /** Absent in the baseline. */
  looper: LoopStats | undefined;
  /** Ledger rows (navigation_events) the looper caused in the window: its own flows' events, and refusals of its browser. */
  looperRows: { flows: number; navigations: number; refusals: number };
  /** Every ledger row written in the window, by anyone. */
  allRows: number;
  /** os.loadavg()[0] when the run ended. */
  load: number;
}

const ms = (v: number) => (Number.isNaN(v) ? '—' : v.toFixed(0));
const perSecond = (n: number, wallMs: number) => (wallMs > 0 ? ((n / wallMs) * 1000).toFixed(0) : '—');

/** One line per run, the columns of the README's table. */
export function formatLoopTable(runs: readonly LoopRun[]): string {
  const header = [
    'run',
    'normal flows ok',
    'flows/s',
    'callback→verified p50 / p99 ms',
    'callback queries p50 / p99 ms',
    'looper calls/s',
    'refused (rate_limited)',
    'looper ledger rows',
    'all ledger rows',
    'load',
  ];
  const rows = runs.map((run) => {
    const callback = callbackPercentiles(run.flows);
    // The loop bench's flows connect to the Report Service (bench/loopBench.ts).
    const queries = percentiles(run.flows.broker.requests[callbackStep('reports')]?.queryMs ?? []);
    const l = run.looper;
    return [
      run.name,
      `${run.verification.ok ? 'yes' : 'NO'} (${run.verification.completed}/${run.verification.flows})`,
      ((run.flows.results.length / run.flows.wallMs) * 1000).toFixed(2),
      `${ms(callback.p50)} / ${ms(callback.p99)}`,
      `${ms(queries.p50)} / ${ms(queries.p99)}`,
      l ? `${perSecond(l.toolCalls, l.ms)} tool + ${perSecond(l.linkViews, l.ms)} link` : '—',
      l ? `${l.refused} of ${l.toolCalls}` : '—',
      l
        ? `${run.looperRows.flows + run.looperRows.refusals} (${run.looperRows.navigations} flows, ${run.looperRows.refusals} refusals)`
        : '—',
      String(run.allRows),
      run.load.toFixed(2),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** What the looper got, beside the table. */
export function formatLooper(run: LoopRun): string {
  const l = run.looper;
  if (!l) return `  ${run.name}: no looper`;
  const errors = l.errors > 0 ? `; ${l.errors} other answers, first: ${l.firstError}` : '';
  return `  ${run.name}: ${l.toolCalls} tool calls (${l.linksGiven} got a link, ${l.refused} refused), ${l.linkViews} views of another user's link (${l.mismatches} refused as not theirs) in ${(l.ms / 1000).toFixed(1)} s${errors}`;
}
