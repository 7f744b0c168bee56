// Chart geometry for the operator dashboard, as data: the
// templates loop over these numbers and draw SVG elements with escaped
// attributes, so no markup is built here and no script runs in the page.
// Pure functions; every coordinate is rounded to one decimal.

export interface Point {
  label: string;
  value: number;
  /** A CSS class suffix for the bar (e.g. `open`, `verified`, `ended`). */
  tone?: string;
}

export interface Tick {
  /** Position on the value axis (y for columns, x for rows). */
  at: number;
  label: string;
}

/** A vertical bar (column) chart. */
export interface ColumnChart {
  width: number;
  height: number;
  plot: { left: number; top: number; right: number; bottom: number };
  columns: {
    x: number;
    y: number;
    w: number;
    h: number;
    label: string;
    value: number;
    tone: string;
    labelX: number;
    showLabel: boolean;
  }[];
  ticks: Tick[];
  max: number;
  total: number;
}

/** A horizontal bar chart: one row per point, labels on the left. */
export interface RowChart {
  width: number;
  height: number;
  plot: { left: number; top: number; right: number; bottom: number };
  rows: {
    x: number;
    y: number;
    w: number;
    h: number;
    label: string;
    value: number;
    tone: string;
    labelY: number;
    valueX: number;
  }[];
  ticks: Tick[];
  max: number;
  total: number;
}

const round = (n: number): number => Math.round(n * 10) / 10;

/** The smallest 1, 2 or 5 × 10^k at or above `n`, at least 1 (the values are counts), so the axis reads well. */
export function niceMax(n: number): number {
  if (!(n > 1)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= n) return step * magnitude;
  return 10 * magnitude;
}

/** Evenly spaced whole-number ticks from 0 to max (counts): 4 or 5 steps, fewer for a small max. */
function tickValues(max: number): number[] {
  const parts = [4, 5, 2, 1].find((p) => p <= max && Number.isInteger(max / p)) ?? 1;
  return Array.from({ length: parts + 1 }, (_, i) => (max * i) / parts);
}

export function columnChart(
  points: readonly Point[],
  options: { width?: number; height?: number; labelEvery?: number } = {},
): ColumnChart {
  const width = options.width ?? 640;
  const height = options.height ?? 200;
  const plot = { left: 44, top: 8, right: width - 8, bottom: height - 28 };
  const max = niceMax(Math.max(0, ...points.map((p) => p.value)));
  const slot = points.length ? (plot.right - plot.left) / points.length : 0;
  const gap = Math.min(4, slot * 0.2);
  const plotHeight = plot.bottom - plot.top;
  const labelEvery = options.labelEvery ?? 1;
  return {
    width,
    height,
    plot,
    max,
    total: points.reduce((sum, p) => sum + p.value, 0),
    ticks: tickValues(max).map((v) => ({ at: round(plot.bottom - (v / max) * plotHeight), label: String(v) })),
    columns: points.map((p, i) => {
      const h = round((Math.max(0, p.value) / max) * plotHeight);
      const x = round(plot.left + i * slot + gap / 2);
      return {
        x,
        y: round(plot.bottom - h),
        w: round(slot - gap),
        h,
        label: p.label,
        value: p.value,
        tone: p.tone ?? 'plain',
        labelX: round(plot.left + i * slot + slot / 2),
        showLabel: i % labelEvery === 0 || i === points.length - 1,
      };
    }),
  };
}

export function rowChart(
  points: readonly Point[],
  options: { width?: number; rowHeight?: number; labelWidth?: number } = {},
): RowChart {
  const width = options.width ?? 640;
  const rowHeight = options.rowHeight ?? 22;
  const labelWidth = options.labelWidth ?? 220;
  const plot = { left: labelWidth, top: 4, right: width - 56, bottom: 4 + points.length * rowHeight };
  const height = plot.bottom + 20;
  const max = niceMax(Math.max(0, ...points.map((p) => p.value)));
  const plotWidth = plot.right - plot.left;
  const barHeight = round(rowHeight * 0.7);
  return {
    width,
    height,
    plot,
    max,
    total: points.reduce((sum, p) => sum + p.value, 0),
    ticks: tickValues(max).map((v) => ({ at: round(plot.left + (v / max) * plotWidth), label: String(v) })),
    rows: points.map((p, i) => {
      const w = round((Math.max(0, p.value) / max) * plotWidth);
      const y = plot.top + i * rowHeight;
      return {
        x: plot.left,
        y: round(y + (rowHeight - barHeight) / 2),
        w,
        h: barHeight,
        label: p.label,
        value: p.value,
        tone: p.tone ?? 'plain',
        labelY: round(y + rowHeight / 2),
        valueX: round(plot.left + w + 6),
      };
    }),
  };
}

/** Upper bounds (seconds) of the completion → verified latency histogram; the last bucket is open. */
export const LATENCY_BOUNDS_SECONDS: readonly number[] = [1, 2, 5, 10, 30, 60, 120, 300, 600];

/** Bucket labels for `bounds` plus the open bucket: ≤1 s, ≤2 s, …, >600 s. */
export function latencyLabels(bounds: readonly number[]): string[] {
  const text = (s: number) => (s >= 60 && s % 60 === 0 ? `${s / 60} min` : `${s} s`);
  return [...bounds.map((b) => `≤${text(b)}`), `>${text(bounds[bounds.length - 1] ?? 0)}`];
}

/** One count per bucket index (0 … bounds.length), zero where the query returned none. */
export function fillBuckets(rows: readonly { bucket: number; count: number }[], bucketCount: number): number[] {
  const counts = new Array<number>(bucketCount).fill(0);
  for (const r of rows)
    if (r.bucket >= 0 && r.bucket < bucketCount) counts[r.bucket] = (counts[r.bucket] ?? 0) + r.count;
  return counts;
}

/**
 * The last `days` UTC days up to and including `now`'s, oldest first, with
 * the count of each (zero for a day with none): `YYYY-MM-DD` labels.
 */
export function dailySeries(rows: readonly { day: string; count: number }[], now: Date, days: number): Point[] {
  const byDay = new Map(rows.map((r) => [r.day, r.count]));
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: days }, (_, i) => {
    const day = new Date(today - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10);
    return { label: day, value: byDay.get(day) ?? 0 };
  });
}

/** The first instant of the oldest day `dailySeries` shows. */
export function seriesStart(now: Date, days: number): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (days - 1) * 86_400_000);
}
