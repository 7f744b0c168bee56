// The tsx process beside the compiled build, as bench:mcp and bench:flow print it: one row per
// figure, both forms' values and compiled ÷ tsx, then the verdict. A measurement, not a test:
// the verdict is printed and nothing fails on it.

/** How far a judged figure may fall behind before the compiled build counts as slower: run-to-run noise here. */
export const SLOWER_MARGIN = 0.1;

export interface FormRow {
  target: string;
  tsx: number;
  compiled: number;
  /** Decimals shown. */
  digits: number;
  unit?: string;
  /** Judged rows decide the verdict: req/s, flows/s (higher is better), p50 latency and CPU (lower). Others are shown. */
  better?: 'higher' | 'lower';
}

/** Whether the compiled value of a judged row is worse than tsx's by more than the margin. */
export function slowerBeyondMargin(row: FormRow): boolean {
  if (!row.better || !(row.tsx > 0) || !Number.isFinite(row.compiled)) return false;
  const ratio = row.compiled / row.tsx;
  return row.better === 'higher' ? ratio < 1 - SLOWER_MARGIN : ratio > 1 + SLOWER_MARGIN;
}

/** The table (target | tsx | compiled | ratio) and the verdict line. */
export function formatFormComparison(title: string, rows: readonly FormRow[]): string {
  const cell = (value: number, row: FormRow) =>
    Number.isFinite(value) ? `${value.toFixed(row.digits)}${row.unit ?? ''}` : '—';
  const table = rows.map((row) => [
    row.target,
    cell(row.tsx, row),
    cell(row.compiled, row),
    row.tsx > 0 && Number.isFinite(row.compiled) ? `${(row.compiled / row.tsx).toFixed(2)}×` : '—',
    row.better ? (row.better === 'higher' ? 'higher is better' : 'lower is better') : '',
  ]);
  const header = ['target', 'tsx', 'compiled', 'ratio', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 || i === 4 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const judged = rows.filter((r) => r.better);
  const slower = judged.filter(slowerBeyondMargin);
  const margin = `${(SLOWER_MARGIN * 100).toFixed(0)} %`;
  const verdict =
    slower.length === 0
      ? `verdict: the compiled build is not slower: on each of the ${judged.length} judged rows it is within ${margin} of the tsx process or better`
      : `verdict: the compiled build is SLOWER than the tsx process by more than ${margin} on ${slower.map((r) => `${r.target} (${(r.compiled / r.tsx).toFixed(2)}×)`).join(', ')}`;
  return [title, '', line(header), line(widths.map((w) => '-'.repeat(w))), ...table.map(line), '', verdict].join('\n');
}
