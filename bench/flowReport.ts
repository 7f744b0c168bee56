import type { BrokerForm } from './brokerModules.js';
import type { FlowResult } from './flowDriver.js';
import type { BrokerStats } from './flowIpc.js';
import type { FlowService } from './flowServices.js';
import type { Verification } from './flowVerify.js';

export interface FlowRun {
  service: Pick<FlowService, 'name' | 'tool' | 'provider' | 'madeNoun'>;
  flows: number;
  concurrency: number;
  users: readonly string[];
  wallMs: number;
  results: readonly FlowResult[];
  broker: BrokerStats;
  brokerPid: number;
  /** The code the broker process ran (bench/brokerModules.ts); tsx when absent. */
  form?: BrokerForm;
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

/** The broker-side step of a provider's callback, as bench/flowProbe.ts names it. */
export const callbackStep = (provider: string) => `GET /oauth/callback/${provider}`;
const RETRY_STEP = 'POST /mcp retry';
const loopDelay = (d: { p50: number; p99: number; max: number }) =>
  `${d.p50.toFixed(1)} / ${d.p99.toFixed(1)} / ${d.max.toFixed(1)} ms`;

/** Callback-to-verified p99 target: under 250 ms. */
export const CALLBACK_P99_TARGET_MS = 250;
/** Database queries per flow target: at most 30 (BEGIN/COMMIT included). */
export const QUERIES_PER_FLOW_TARGET = 30;
const queriesTarget = (run: Pick<FlowRun, 'flows' | 'broker'>) =>
  queriesPerFlow(run) <= QUERIES_PER_FLOW_TARGET ? 'met' : 'MISSED';

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
const latencyRow = (label: string, p: Percentiles) =>
  `  ${label.padEnd(50)} ${ms(p.p50).padStart(10)} ${ms(p.p99).padStart(10)} ${ms(p.max).padStart(10)} ${ms(p.mean).padStart(10)}   n=${p.n}`;

export const flowsPerSecond = (run: Pick<FlowRun, 'flows' | 'wallMs'>) => (run.flows / run.wallMs) * 1000;
export const queriesPerFlow = (run: Pick<FlowRun, 'flows' | 'broker'>) => run.broker.queries / run.flows;

/** The callback → verified latencies of a run's completed flows. */
export function callbackPercentiles(run: Pick<FlowRun, 'results'>): Percentiles {
  return percentiles(
    run.results.flatMap((r) => (r.failure === undefined && r.callbackMs !== undefined ? [r.callbackMs] : [])),
  );
}

/** The bench's report of one run, as printed. */
export function formatRun(run: FlowRun): string {
  const ok = run.results.filter((r) => r.failure === undefined);
  const callback = callbackPercentiles(run);
  const retry = percentiles(ok.map((r) => r.retryMs ?? Number.NaN).filter((v) => !Number.isNaN(v)));
  const v = run.verification;
  const step = callbackStep(run.service.provider);
  const lines = [
    '',
    `Connect flow bench, ${run.service.name} (${run.service.tool}): ${run.flows} flows, ${run.concurrency} at a time, as ${run.users.join(', ')} (each flow forgets its user's connection first)`,
    `  broker: child process ${run.brokerPid} (${run.form === 'compiled' ? 'the compiled build, dist/' : 'src/ through tsx'}), pool ${run.poolMax}; ${run.database}; the development servers: the bench process`,
    '',
    `  ${'latency'.padEnd(50)} ${'p50'.padStart(10)} ${'p99'.padStart(10)} ${'max'.padStart(10)} ${'mean'.padStart(10)}`,
    latencyRow(`callback → verified (${step} → 303)`, callback),
    latencyRow('retry → complete (MCP retry round trip)', retry),
    latencyRow('whole flow', percentiles(ok.map((r) => r.totalMs))),
    latencyRow("  of which waiting for the user's turn", percentiles(ok.map((r) => r.gateWaitMs))),
    '',
    `  ${'measured in the broker process'.padEnd(50)}`,
    ...[step, RETRY_STEP].flatMap((measured) => {
      const times = run.broker.requests[measured] ?? { serverMs: [], upstreamMs: [], poolWaitMs: [], queryMs: [] };
      return [
        latencyRow(`${measured}: arrival → response sent`, percentiles(times.serverMs)),
        latencyRow('  of which waiting for upstream HTTP', percentiles(times.upstreamMs)),
        latencyRow('  of which waiting for a pool connection', percentiles(times.poolWaitMs)),
        latencyRow('  of which running queries', percentiles(times.queryMs)),
      ];
    }),
    row(
      'event-loop delay (beyond the timer) p50/p99/max',
      `broker ${loopDelay(run.broker.loopDelay)}; bench process ${loopDelay(run.benchLoopDelay)}`,
    ),
    '',
    row(
      'throughput',
      `${flowsPerSecond(run).toFixed(2)} flows/s (${run.flows} flows in ${(run.wallMs / 1000).toFixed(2)} s)`,
    ),
    row(
      'database queries per flow (broker pool)',
      `${queriesPerFlow(run).toFixed(1)} (${run.broker.queries} in all, BEGIN/COMMIT included)`,
    ),
    ...Object.entries(run.broker.queriesByStep)
      .sort(([, a], [, b]) => b - a)
      .map(([step, n]) => row(`  ${step}`, (n / run.flows).toFixed(1))),
    row(
      'broker peak memory (RSS, every 50 ms)',
      `${mib(run.broker.rssPeak)} (at the start of the run ${mib(run.broker.rssAtWindow)}; peak heap used ${mib(run.broker.heapUsedPeak)}; ${run.broker.samples} samples)`,
    ),
    row(
      'broker 5xx responses / error log lines',
      `${run.broker.serverErrors} / ${run.broker.errorLogs} (warnings ${run.broker.warnLogs})`,
    ),
    '',
    row('flows completed', `${v.completed} / ${v.flows}`),
    row(`${run.service.madeNoun} at ${run.service.name}`, `${v.made}`),
    row('operation receipts', `${v.receipts} (${v.succeededReceipts} succeeded)`),
    row(
      'navigations by status',
      Object.entries(v.navigationsByStatus)
        .map(([s, n]) => `${s} ${n}`)
        .join(', '),
    ),
    row('lost / doubled / wrong one', `${v.lost.length} / ${v.doubled.length} / ${v.mismatched.length}`),
    row(
      `target: callback → verified p99 < ${CALLBACK_P99_TARGET_MS} ms`,
      callback.p99 < CALLBACK_P99_TARGET_MS ? `met (${ms(callback.p99)})` : `MISSED (${ms(callback.p99)})`,
    ),
    row(
      `target: database queries per flow ≤ ${QUERIES_PER_FLOW_TARGET}`,
      `${queriesTarget(run)} (${queriesPerFlow(run).toFixed(1)})`,
    ),
    row('result', v.ok ? `OK: every flow's ${run.service.tool} was done exactly once` : 'FAILED'),
  ];
  const failures = run.results.filter((r) => r.failure !== undefined);
  if (failures.length > 0)
    lines.push(
      '',
      `  failed flows (${failures.length}, first 10):`,
      ...failures.slice(0, 10).map((r) => `    #${r.index} ${r.login} at ${r.failure!.step}: ${r.failure!.message}`),
    );
  for (const [label, list] of [
    ['lost', v.lost],
    ['doubled', v.doubled],
    ['wrong report', v.mismatched],
    ['problems', v.problems],
  ] as const) {
    if (list.length > 0) lines.push(`  ${label}: ${list.slice(0, 10).join('; ')}`);
  }
  if (run.broker.firstLogs.length > 0)
    lines.push('', '  broker log (first lines):', ...run.broker.firstLogs.map((l) => `    ${l.slice(0, 400)}`));
  if (run.devErrors.length > 0)
    lines.push(
      '',
      `  development servers logged ${run.devErrors.length} errors; first: ${run.devErrors[0]!.slice(0, 400)}`,
    );
  return `${lines.join('\n')}\n`;
}

/** The runs of one bench side by side: a column per service, the figures to compare in rows. */
export function formatSideBySide(runs: readonly FlowRun[]): string {
  const width = Math.max(24, ...runs.map((r) => `${r.service.name} (${r.service.tool})`.length + 2));
  const line = (label: string, cells: string[]) =>
    `  ${label.padEnd(40)}${cells.map((c) => c.padStart(width)).join('')}`;
  const callbacks = runs.map(callbackPercentiles);
  return `${[
    '',
    `Side by side: ${runs.map((r) => r.service.name).join(' vs ')}, ${runs[0]?.flows ?? 0} flows each, ${runs[0]?.concurrency ?? 0} at a time, each on a fresh stack`,
    line(
      '',
      runs.map((r) => `${r.service.name} (${r.service.tool})`),
    ),
    line(
      'callback → verified p50',
      callbacks.map((c) => ms(c.p50)),
    ),
    line(
      'callback → verified p99',
      callbacks.map((c) => ms(c.p99)),
    ),
    line(
      `  target p99 < ${CALLBACK_P99_TARGET_MS} ms`,
      callbacks.map((c) => (c.p99 < CALLBACK_P99_TARGET_MS ? 'met' : 'MISSED')),
    ),
    line(
      'database queries per flow (broker pool)',
      runs.map((r) => queriesPerFlow(r).toFixed(1)),
    ),
    line(
      `  target ≤ ${QUERIES_PER_FLOW_TARGET}`,
      runs.map((r) => queriesTarget(r)),
    ),
    line(
      'throughput',
      runs.map((r) => `${flowsPerSecond(r).toFixed(2)} flows/s`),
    ),
    line(
      'done exactly once',
      runs.map((r) =>
        r.verification.ok
          ? `yes (${r.verification.completed}/${r.verification.flows})`
          : `NO (${r.verification.completed}/${r.verification.flows})`,
      ),
    ),
  ].join('\n')}\n`;
}
