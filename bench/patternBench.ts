import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { formatTable } from '../src/cli/table.js';
import { safePattern } from '../src/security/safePattern.js';
import { createOutputValidator } from '../src/upstream/outputValidator.js';

// npm run bench:patterns [-- --runs 50]: the patterns known to take V8's backtracking engine time
// exponential (or polynomial) in the text, each on RE2 (src/security/safePattern.ts) against a
// 10 KiB text built to make a backtracking engine try every way of matching it; then one through
// an upstream's outputSchema check (src/upstream/outputValidator.ts). The target is under 1 ms each
// (the median). A measurement, not a gate: it exits 0 whatever the figures.

const { values } = parseArgs({ options: { runs: { type: 'string', default: '50' } } });
const runs = Number(values.runs);
if (!(Number.isInteger(runs) && runs > 0)) throw new Error('--runs must be a positive integer');

const KIB = 10 * 1024;
const fill = (unit: string, tail: string) => unit.repeat(Math.ceil((KIB - tail.length) / unit.length)) + tail;

// Each: the pattern and the worst text for it (a long run it almost matches, then one character that fails).
const WORST: [string, string][] = [
  ['^(a+)+$', fill('a', '!')],
  ['^(a|a)*$', fill('a', '!')],
  ['^(a|aa)+$', fill('a', '!')],
  ['^(a*)*b$', fill('a', '!')],
  ['(x+x+)+y', fill('x', '')],
  ['^(\\w+\\s?)*$', fill('word ', '!')],
  ['^(([a-z])+.)+[A-Z]([a-z])+$', fill('a', '!')],
  [
    '^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$',
    fill('a', '!'),
  ],
  ['^(\\d+|\\d+\\.\\d+)*$', fill('1', 'x')],
  ['^(.*?,){11}P', fill('1,', '')],
];

function median(timings: number[]): number {
  const sorted = [...timings].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** The median and the slowest of `runs` calls, in ms, after one warm-up call. */
function time(work: () => unknown): { median: number; max: number } {
  work();
  const timings: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    work();
    timings.push(performance.now() - started);
  }
  return { median: median(timings), max: Math.max(...timings) };
}

const ms = (n: number) => n.toFixed(3);
const rows = WORST.map(([source, text]) => {
  const compiled = safePattern(source);
  const t = time(() => compiled.test(text));
  return [
    source.length > 40 ? `${source.slice(0, 37)}...` : source,
    String(text.length),
    ms(t.median),
    ms(t.max),
    t.median < 1 ? 'yes' : 'NO',
  ];
});

const check = createOutputValidator().getValidator({
  type: 'object',
  properties: { word: { type: 'string', pattern: '^(a+)+$' } },
});
const schema = time(() => check({ word: fill('a', '!') }));
rows.push([
  'outputSchema ^(a+)+$ (whole check)',
  String(KIB),
  ms(schema.median),
  ms(schema.max),
  schema.median < 1 ? 'yes' : 'NO',
]);

console.log(`RE2 (re2js) on 10 KiB worst-case texts, ${runs} runs each, Node ${process.version}`);
console.log(formatTable(['pattern', 'chars', 'median ms', 'max ms', 'under 1 ms'], rows));
