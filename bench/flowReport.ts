import type { FlowResult } from './flowDriver.js';
import type { BrokerStats } from './flowIpc.js';
import type { Verification } from './flowVerify.js';

export interface FlowRun {
  flows: number;
  concurrency: number;
  users: readonly string[];
  wallMs: number;
  results: readonly FlowResult[];
  broker: BrokerStats;
  brokerPid: number;
  poolMax: number;
  database: string;
  verification: Verification;
  devErrors: readonly string[];
  /** The bench process's event-loop delay (it also serves the identity provider and the Report Service). */
  benchLoopDelay: { p50: number; p99: number; max: number };
}

export interface Percentiles {
  n: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

const CALLBACK_STEP = 'GET /oauth/callback';
const RETRY_STEP = 'POST /mcp retry';
const loopDelay = (d: { p50: number; p99: number; max: number }) => `${d.p50.toFixed(1)} / ${d.p99.toFixed(1)} / ${d.max.toFixed(1)} ms`;

/** Callback-to-verified p99 target (issue: under 250 ms). */
export const CALLBACK_P99_TARGET_MS = 250;

/** Nearest-rank percentiles. */
export function percentiles(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
  const mean = sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : Number.NaN;
  return { n: sorted.length, p50: rank(50), p99: rank(99), max: sorted.at(-1) ?? Number.NaN, mean };
}

const ms = (v: number) => (Number.isNaN(v) ? '—' : `${v.toFixed(1)} ms`);
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const row = (label: string, value: string) => `  ${label.padEnd(50)} ${value}`;
const latencyRow = (label: string, p: Percentiles) => `  ${label.padEnd(50)} ${ms(p.p50).padStart(10)} ${ms(p.p99).padStart(10)} ${ms(p.max).padStart(10)} ${ms(p.mean).padStart(10)}   n=${p.n}`;

/** The bench's report, as printed. */
export function formatRun(run: FlowRun): string {
  const ok = run.results.filter((r) => r.failure === undefined);
  const callback = percentiles(ok.map((r) => r.callbackMs ?? Number.NaN).filter((v) => !Number.isNaN(v)));
  const retry = percentiles(ok.map((r) => r.retryMs ?? Number.NaN).filter((v) => !Number.isNaN(v)));
  const v = run.verification;
  const lines = [
    '',
    `Connect flow bench: ${run.flows} flows, ${run.concurrency} at a time, as ${run.users.join(', ')} (each flow forgets its user's connection first)`,
    `  broker: child process ${run.brokerPid}, pool ${run.poolMax}; ${run.database}; identity provider and Report Service: the bench process`,
    '',
    `  ${'latency'.padEnd(50)} ${'p50'.padStart(10)} ${'p99'.padStart(10)} ${'max'.padStart(10)} ${'mean'.padStart(10)}`,
    latencyRow('callback → verified (GET /oauth/callback → 303)', callback),
    latencyRow('retry → complete (MCP retry round trip)', retry),
    latencyRow('whole flow', percentiles(ok.map((r) => r.totalMs))),
    latencyRow("  of which waiting for the user's turn", percentiles(ok.map((r) => r.gateWaitMs))),
    '',
    `  ${'measured in the broker process'.padEnd(50)}`,
    ...[CALLBACK_STEP, RETRY_STEP].flatMap((step) => {
      const times = run.broker.requests[step] ?? { serverMs: [], upstreamMs: [], poolWaitMs: [], queryMs: [] };
      return [
        latencyRow(`${step}: arrival → response sent`, percentiles(times.serverMs)),
        latencyRow('  of which waiting for upstream HTTP', percentiles(times.upstreamMs)),
        latencyRow('  of which waiting for a pool connection', percentiles(times.poolWaitMs)),
        latencyRow('  of which running queries', percentiles(times.queryMs)),
      ];
    }),
    row('event-loop delay (beyond the timer) p50/p99/max', `broker ${loopDelay(run.broker.loopDelay)}; bench process ${loopDelay(run.benchLoopDelay)}`),
    '',
    row('throughput', `${((run.flows / run.wallMs) * 1000).toFixed(2)} flows/s (${run.flows} flows in ${(run.wallMs / 1000).toFixed(2)} s)`),
    row('database queries per flow (broker pool)', `${(run.broker.queries / run.flows).toFixed(1)} (${run.broker.queries} in all, BEGIN/COMMIT included)`),
    ...Object.entries(run.broker.queriesByStep)
      .sort(([, a], [, b]) => b - a)
      .map(([step, n]) => row(`  ${step}`, (n / run.flows).toFixed(1))),
    row('broker peak memory (RSS, every 50 ms)', `${mib(run.broker.rssPeak)} (at the start of the run ${mib(run.broker.rssAtWindow)}; peak heap used ${mib(run.broker.heapUsedPeak)}; ${run.broker.samples} samples)`),
    row('broker 5xx responses / error log lines', `${run.broker.serverErrors} / ${run.broker.errorLogs} (warnings ${run.broker.warnLogs})`),
    '',
    row('flows completed', `${v.completed} / ${v.flows}`),
    row('reports at the Report Service', `${v.reports}`),
    row('operation receipts', `${v.receipts} (${v.succeededReceipts} succeeded)`),
    row('navigations by status', Object.entries(v.navigationsByStatus).map(([s, n]) => `${s} ${n}`).join(', ')),
    row('lost / doubled / wrong report', `${v.lost.length} / ${v.doubled.length} / ${v.mismatched.length}`),
    row(`target: callback → verified p99 < ${CALLBACK_P99_TARGET_MS} ms`, callback.p99 < CALLBACK_P99_TARGET_MS ? `met (${ms(callback.p99)})` : `MISSED (${ms(callback.p99)})`),
    row('result', v.ok ? 'OK: every flow created its report exactly once' : 'FAILED'),
  ];
  const failures = run.results.filter((r) => r.failure !== undefined);
  if (failures.length > 0) lines.push('', `  failed flows (${failures.length}, first 10):`, ...failures.slice(0, 10).map((r) => `    #${r.index} ${r.login} at ${r.failure!.step}: ${r.failure!.message}`));
  for (const [label, list] of [['lost', v.lost], ['doubled', v.doubled], ['wrong report', v.mismatched], ['problems', v.problems]] as const) {
    if (list.length > 0) lines.push(`  ${label}: ${list.slice(0, 10).join('; ')}`);
  }
  if (run.broker.firstLogs.length > 0) lines.push('', '  broker log (first lines):', ...run.broker.firstLogs.map((l) => `    ${l.slice(0, 400)}`));
  if (run.devErrors.length > 0) lines.push('', `  development servers logged ${run.devErrors.length} errors; first: ${run.devErrors[0]!.slice(0, 400)}`);
  return `${lines.join('\n')}\n`;
}
