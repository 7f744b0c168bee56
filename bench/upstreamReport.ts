import { formatColumns, RESULT_HEADER, resultRow } from './report.js';
import type { UpstreamRuns } from './upstreamBench.js';

// The targets for a proxied upstream call at 16 connections: the broker adds at most
// 2 ms at p50 and keeps at least 70 % of the direct throughput.
const ADDED_P50_TARGET_MS = 2;
const THROUGHPUT_SHARE_TARGET = 0.7;

/** The two rows, then the broker's added p50 and its share of the direct req/s, each judged against its target. */
export function formatUpstreamReport(runs: UpstreamRuns, connections: number, seconds: number): string {
  const { proxied, direct } = runs;
  const added = proxied.p50Ms - direct.p50Ms;
  const share = proxied.requestsPerSecond / direct.requestsPerSecond;
  const out = [
    `${connections} connections, ${seconds} s measured per row after a warm-up; memo runs in this process too, so CPU µs/req counts the upstream's work in both rows`,
    '',
    ...formatColumns(RESULT_HEADER, [
      resultRow('tools/call list', 'memo directly', direct),
      resultRow('tools/call memo_list', 'broker → memo', proxied),
    ]),
    '',
    `proxied upstream call: the broker adds ${added.toFixed(2)} ms at p50 (target ≤ ${ADDED_P50_TARGET_MS} ms) ${verdict(added <= ADDED_P50_TARGET_MS)}; ` +
      `keeps ${(share * 100).toFixed(0)} % of the direct req/s (target ≥ ${THROUGHPUT_SHARE_TARGET * 100} %) ${verdict(share >= THROUGHPUT_SHARE_TARGET)}`,
  ];
  for (const [name, r] of [
    ['memo directly', direct],
    ['broker → memo', proxied],
  ] as const)
    if (r.errors > 0) out.push('', `${name}: ${r.errors} failed requests`, ...r.errorSamples.map((s) => `  ${s}`));
  return out.join('\n');
}

function verdict(ok: boolean): string {
  return ok ? 'met' : 'missed';
}
