import type { BrokerForm } from './brokerModules.js';
import { formatFormComparison, type FormRow } from './formReport.js';
import {
  CALLBACK_P99_TARGET_MS,
  QUERIES_PER_FLOW_TARGET,
  callbackPercentiles,
  callbackStep,
  flowsPerSecond,
  percentiles,
  queriesPerFlow,
  type FlowRun,
} from './flowReport.js';

// bench:flow's runs of the broker process from src/ through tsx beside the compiled build's:
// per service, the throughput, the latencies the flow report prints and the targets, both forms.

const MIB = 1024 * 1024;

export function formatFlowFormComparison(pairs: readonly Record<BrokerForm, FlowRun>[]): string {
  const rows: FormRow[] = [];
  for (const pair of pairs) {
    const name = pair.tsx.service.name;
    const both = (pick: (run: FlowRun) => number) => ({ tsx: pick(pair.tsx), compiled: pick(pair.compiled) });
    const ok = (run: FlowRun) => run.results.filter((r) => r.failure === undefined);
    const inBroker = (run: FlowRun) =>
      percentiles(run.broker.requests[callbackStep(run.service.provider)]?.serverMs ?? []);
    rows.push(
      { target: `${name}: throughput`, ...both(flowsPerSecond), digits: 2, unit: ' flows/s', better: 'higher' },
      {
        target: `${name}: callback → verified p50`,
        ...both((r) => callbackPercentiles(r).p50),
        digits: 1,
        unit: ' ms',
        better: 'lower',
      },
      {
        target: `${name}: callback → verified p99 (target < ${CALLBACK_P99_TARGET_MS} ms)`,
        ...both((r) => callbackPercentiles(r).p99),
        digits: 1,
        unit: ' ms',
      },
      {
        target: `${name}: callback in the broker, arrival → response p50`,
        ...both((r) => inBroker(r).p50),
        digits: 1,
        unit: ' ms',
        better: 'lower',
      },
      {
        target: `${name}: retry → complete p50`,
        ...both((r) => percentiles(ok(r).flatMap((f) => (f.retryMs === undefined ? [] : [f.retryMs]))).p50),
        digits: 1,
        unit: ' ms',
        better: 'lower',
      },
      {
        target: `${name}: whole flow p50`,
        ...both((r) => percentiles(ok(r).map((f) => f.totalMs)).p50),
        digits: 1,
        unit: ' ms',
        better: 'lower',
      },
      {
        target: `${name}: queries per flow (target ≤ ${QUERIES_PER_FLOW_TARGET})`,
        ...both(queriesPerFlow),
        digits: 1,
      },
      { target: `${name}: broker peak RSS`, ...both((r) => r.broker.rssPeak / MIB), digits: 1, unit: ' MiB' },
    );
  }
  const first = pairs[0]?.tsx;
  const once = pairs.every((p) => p.tsx.verification.ok && p.compiled.verification.ok);
  return `\n${formatFormComparison(
    [
      `the broker process from src/ through tsx (as npm start) beside the compiled build (dist/, as the image runs it):`,
      `${first?.flows ?? 0} flows, ${first?.concurrency ?? 0} at a time, per service and form, each on a fresh stack with the same settings and load;`,
      `done exactly once in every run: ${once ? 'yes' : 'NO'}`,
    ].join('\n'),
    rows,
  )}\n`;
}
