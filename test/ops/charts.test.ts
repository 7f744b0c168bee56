import { describe, expect, it } from 'vitest';
import {
  columnChart,
  dailySeries,
  fillBuckets,
  LATENCY_BOUNDS_SECONDS,
  latencyLabels,
  niceMax,
  rowChart,
  seriesStart,
} from '../../src/ops/charts.js';

describe('chart geometry (operator dashboard)', () => {
  it('rounds the value axis up to 1, 2 or 5 times a power of ten', () => {
    expect([0, -3, 0.4, 1, 2, 3, 7, 10, 11, 180, 201, 5000, 5001].map(niceMax)).toEqual([
      1, 1, 1, 1, 2, 5, 10, 10, 20, 200, 500, 5000, 10000,
    ]);
  });

  it('draws columns from the baseline up, proportional to the value, inside the plot', () => {
    const chart = columnChart(
      [
        { label: 'a', value: 10 },
        { label: 'b', value: 5 },
        { label: 'c', value: 0 },
        { label: 'd', value: 20 },
      ],
      { width: 452, height: 236 },
    );
    // plot: left 44, right 444 (400 wide, 100 per slot), top 8, bottom 208 (200 high); max 20.
    expect(chart.plot).toEqual({ left: 44, top: 8, right: 444, bottom: 208 });
    expect(chart.max).toBe(20);
    expect(chart.total).toBe(35);
    expect(chart.columns.map((c) => [c.x, c.y, c.w, c.h])).toEqual([
      [46, 108, 96, 100],
      [146, 158, 96, 50],
      [246, 208, 96, 0],
      [346, 8, 96, 200],
    ]);
    expect(chart.columns.map((c) => c.labelX)).toEqual([94, 194, 294, 394]);
    for (const c of chart.columns) {
      expect(c.y + c.h).toBeCloseTo(chart.plot.bottom, 5);
      expect(c.x + c.w).toBeLessThanOrEqual(chart.plot.right);
    }
    expect(chart.ticks).toEqual([
      { at: 208, label: '0' },
      { at: 158, label: '5' },
      { at: 108, label: '10' },
      { at: 58, label: '15' },
      { at: 8, label: '20' },
    ]);
  });

  it('labels every n-th column and always the last one', () => {
    const chart = columnChart(
      Array.from({ length: 12 }, (_, i) => ({ label: String(i), value: i })),
      { labelEvery: 5 },
    );
    expect(chart.columns.filter((c) => c.showLabel).map((c) => c.label)).toEqual(['0', '5', '10', '11']);
  });

  it('draws an empty chart with a unit axis and flat bars', () => {
    const chart = columnChart([{ label: 'x', value: 0 }]);
    expect(chart.max).toBe(1);
    expect(chart.columns[0]).toMatchObject({ h: 0, y: chart.plot.bottom });
    expect(chart.ticks.map((t) => t.label)).toEqual(['0', '1']);
    expect(columnChart([]).columns).toEqual([]);
  });

  it('draws rows left to right from the label column, one row per point, with tones', () => {
    const chart = rowChart(
      [
        { label: 'CREATED', value: 3, tone: 'open' },
        { label: 'EXPIRED', value: 10, tone: 'ended' },
      ],
      { width: 476, rowHeight: 20, labelWidth: 220 },
    );
    // plot: 220 … 420 (200 wide); max 10.
    expect(chart.plot).toEqual({ left: 220, top: 4, right: 420, bottom: 44 });
    expect(chart.height).toBe(64);
    expect(chart.rows.map((r) => [r.x, r.y, r.w, r.h, r.labelY, r.valueX, r.tone])).toEqual([
      [220, 7, 60, 14, 14, 286, 'open'],
      [220, 27, 200, 14, 34, 426, 'ended'],
    ]);
    expect(chart.ticks.map((t) => [t.at, t.label])).toEqual([
      [220, '0'],
      [260, '2'],
      [300, '4'],
      [340, '6'],
      [380, '8'],
      [420, '10'],
    ]);
  });

  it('names the latency buckets and fills missing ones with zero', () => {
    expect(latencyLabels(LATENCY_BOUNDS_SECONDS)).toEqual([
      '≤1 s',
      '≤2 s',
      '≤5 s',
      '≤10 s',
      '≤30 s',
      '≤1 min',
      '≤2 min',
      '≤5 min',
      '≤10 min',
      '>10 min',
    ]);
    expect(
      fillBuckets(
        [
          { bucket: 1, count: 4 },
          { bucket: 9, count: 2 },
          { bucket: 12, count: 7 },
        ],
        10,
      ),
    ).toEqual([0, 4, 0, 0, 0, 0, 0, 0, 0, 2]);
  });

  it('lays out the last n UTC days, oldest first, with zero for days without flows', () => {
    const now = new Date('2026-03-02T05:00:00Z');
    const series = dailySeries(
      [
        { day: '2026-02-28', count: 3 },
        { day: '2026-03-02', count: 1 },
        { day: '2026-01-01', count: 9 },
      ],
      now,
      4,
    );
    expect(series).toEqual([
      { label: '2026-02-27', value: 0 },
      { label: '2026-02-28', value: 3 },
      { label: '2026-03-01', value: 0 },
      { label: '2026-03-02', value: 1 },
    ]);
    expect(seriesStart(now, 4).toISOString()).toBe('2026-02-27T00:00:00.000Z');
  });
});
