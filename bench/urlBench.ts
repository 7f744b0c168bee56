import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { formatTable } from '../src/cli/table.js';
import { readProtectedDomainsFile, shippedProtectedDomains } from '../src/security/protectedDomains.js';
import { classifyUrl } from '../src/security/urlClassifier.js';
import { readUrlCorpus, type CorpusEntry } from '../test/support/urlCorpus.js';

// npm run bench:url [-- --seconds 5]: URLs classified per second on one core
// (this process's one JavaScript thread) over the benign corpus
// (test/fixtures/url-corpus/benign.txt), judged as a third party's link the
// way an upstream's URL elicitation is; then each kind of URL in microseconds,
// the malicious corpus for comparison, and the one-off costs (the shipped list
// and the first non-ASCII host, which loads the Unicode script tables). A
// measurement, not a gate: it exits 0 unless a benign URL is refused.

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' } } });
const seconds = Number(values.seconds);
if (!(seconds > 0)) throw new Error('--seconds must be a positive number');

const t0 = performance.now();
const protectedDomains = shippedProtectedDomains();
const loadMs = performance.now() - t0;
const options = { allowLoopback: false, allowFragment: true, protectedDomains };
const judge = (url: string) => classifyUrl(url, options);

const t1 = performance.now();
judge('https://bücher.de/');
const firstIdnMs = performance.now() - t1;

const benign = readUrlCorpus('benign.txt');
const malicious = readUrlCorpus('malicious.txt');
const refused = benign.filter((e) => judge(e.url).verdict === 'block');

/** Passes over the corpus until `forMs` has gone by: URLs per second and every call's duration (µs). */
function measure(entries: readonly CorpusEntry[], forMs: number): { perSecond: number; micros: Float64Array } {
  const micros: number[] = [];
  let done = 0;
  const start = performance.now();
  while (performance.now() - start < forMs) {
    for (const { url } of entries) {
      const before = performance.now();
      judge(url);
      micros.push((performance.now() - before) * 1000);
    }
    done += entries.length;
  }
  return { perSecond: done / ((performance.now() - start) / 1000), micros: Float64Array.from(micros).sort() };
}

const quantile = (sorted: Float64Array, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
const us = (n: number) => n.toFixed(1);

measure(benign, 1000); // warm-up: the JIT, the caches of script lookups
const overall = measure(benign, seconds * 1000);
const kinds = [...new Set(benign.map((e) => e.section))];
const rows = kinds.map((kind) => {
  const { perSecond, micros } = measure(
    benign.filter((e) => e.section === kind),
    Math.max(250, (seconds * 1000) / 4),
  );
  return [
    kind,
    String(benign.filter((e) => e.section === kind).length),
    Math.round(perSecond).toLocaleString('en'),
    us(quantile(micros, 0.5)),
    us(quantile(micros, 0.99)),
  ];
});
const bad = measure(malicious, Math.max(250, (seconds * 1000) / 4));

console.log(`URL classifier, one core, Node ${process.version}`);
console.log(
  `benign corpus (${benign.length} URLs): ${Math.round(overall.perSecond).toLocaleString('en')} URLs/s, ` +
    `p50 ${us(quantile(overall.micros, 0.5))} µs, p99 ${us(quantile(overall.micros, 0.99))} µs, max ${us(quantile(overall.micros, 1))} µs`,
);
console.log(
  formatTable(
    ['benign kind', 'URLs', 'URLs/s', 'p50 µs', 'p99 µs'],
    [
      ...rows,
      [
        '(malicious corpus)',
        String(malicious.length),
        Math.round(bad.perSecond).toLocaleString('en'),
        us(quantile(bad.micros, 0.5)),
        us(quantile(bad.micros, 0.99)),
      ],
    ],
  ),
);
console.log(
  `one-off: shipped list (${readProtectedDomainsFile().length} domains) ${loadMs.toFixed(1)} ms; ` +
    `first non-ASCII host (Unicode script tables) ${firstIdnMs.toFixed(1)} ms`,
);
if (refused.length > 0) {
  console.log(`benign URLs refused: ${refused.map((e) => `line ${e.line}`).join(', ')}`);
  process.exitCode = 1;
}
