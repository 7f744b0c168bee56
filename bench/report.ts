import type { LoadResult } from './load.js';
import type { CaseName, PeerCaseName } from './wire.js';

export type ServerName = 'broker' | 'peer';

export interface Measurement {
  caseName: CaseName;
  server: ServerName;
  result: LoadResult;
}

// The targets: broker req/s over the peer's, and the broker's p99 at 16 connections.
export const RATIO_TARGET: Record<PeerCaseName, number> = { 'tools/list': 3, 'tools/call notes_list': 2 };
export const P99_TARGET_MS = 20;

/** The figures as text: one table row per measurement, then the ratios and verdicts per case. */
export function formatReport(measurements: readonly Measurement[], connections: number, seconds: number): string {
  const rows = measurements.map(({ caseName, server, result }) => resultRow(caseName, server, result));
  const out = [
    `${connections} connections, ${seconds} s measured per window after a warm-up; a broker row is two windows (bench/formWindows.ts)`,
    '',
    ...formatColumns(RESULT_HEADER, rows),
    '',
  ];

  for (const caseName of Object.keys(RATIO_TARGET) as PeerCaseName[]) {
    const broker = measurements.find((m) => m.caseName === caseName && m.server === 'broker')?.result;
    const peer = measurements.find((m) => m.caseName === caseName && m.server === 'peer')?.result;
    if (!broker || !peer) continue;
    const ratio = broker.requestsPerSecond / peer.requestsPerSecond;
    const target = RATIO_TARGET[caseName];
    out.push(
      `${caseName}: broker/peer req/s ${ratio.toFixed(2)}× (target ≥ ${target}×) ${verdict(ratio >= target)}; ` +
        `CPU/req ${(peer.serverCpuUsPerRequest / broker.serverCpuUsPerRequest).toFixed(2)}× lower; broker p99 ${broker.p99Ms.toFixed(2)} ms (target < ${P99_TARGET_MS} ms) ${verdict(broker.p99Ms < P99_TARGET_MS)}`,
    );
  }
  const failed = measurements.filter((m) => m.result.errors > 0);
  for (const m of failed)
    out.push(
      '',
      `${m.caseName} on ${m.server}: ${m.result.errors} failed requests`,
      ...m.result.errorSamples.map((s) => `  ${s}`),
    );
  return out.join('\n');
}

/** The columns of one load run's row (resultRow). */
export const RESULT_HEADER = ['case', 'server', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'requests', 'errors'];

/** One load run as a row of RESULT_HEADER. */
export function resultRow(caseName: string, server: string, r: LoadResult): string[] {
  return [
    caseName,
    server,
    r.requestsPerSecond.toFixed(0),
    r.p50Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    r.serverCpuUsPerRequest.toFixed(0),
    String(r.requests),
    String(r.errors),
  ];
}

/** A header, a rule and the rows: the first two columns (names) left-aligned, the figures right-aligned. */
export function formatColumns(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}

function verdict(ok: boolean): string {
  return ok ? 'PASS' : 'MISS';
}
