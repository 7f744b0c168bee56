import { describe, expect, it } from 'vitest';
import { shippedProtectedDomains } from '../../src/security/protectedDomains.js';
import { classifyUrl } from '../../src/security/urlClassifier.js';
import { readUrlCorpus, type CorpusEntry } from '../support/urlCorpus.js';

// The release gate on the URL corpora: every malicious URL blocked, fewer
// than 0.1% of the benign ones refused. Judged as a link from a third party
// (an upstream's URL elicitation): production, fragments allowed, the
// shipped protected domains. The figures print on every run.

const options = { allowLoopback: false, allowFragment: true, protectedDomains: shippedProtectedDomains() };
const MAX_BENIGN_REFUSAL = 0.001;

interface Figures {
  total: number;
  blocked: number;
  bySection: Map<string, { total: number; blocked: number; rules: Set<string> }>;
  wrong: string[];
}

function judgeCorpus(entries: readonly CorpusEntry[], expected: 'allow' | 'block'): Figures {
  const figures: Figures = { total: 0, blocked: 0, bySection: new Map(), wrong: [] };
  for (const { section, url, line } of entries) {
    const verdict = classifyUrl(url, options);
    const row = figures.bySection.get(section) ?? { total: 0, blocked: 0, rules: new Set<string>() };
    figures.bySection.set(section, row);
    figures.total++;
    row.total++;
    if (verdict.verdict === 'block') {
      figures.blocked++;
      row.blocked++;
      row.rules.add(verdict.rule);
    }
    if (verdict.verdict !== expected)
      figures.wrong.push(`line ${line} (${section}): ${JSON.stringify(url)} ${verdict.rule ?? 'allowed'}`);
  }
  return figures;
}

const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(2)}%`;

function print(title: string, figures: Figures): void {
  const lines = [...figures.bySection].map(
    ([section, row]) =>
      `  ${section.padEnd(24)} ${String(row.blocked).padStart(4)}/${String(row.total).padEnd(4)} ${[...row.rules].sort().join(', ')}`,
  );
  console.log(
    [
      `${title}: ${figures.blocked}/${figures.total} blocked (${percent(figures.blocked, figures.total)})`,
      ...lines,
    ].join('\n'),
  );
}

describe('URL corpora gate', () => {
  it('blocks 100% of the malicious corpus, by technique', () => {
    const entries = readUrlCorpus('malicious.txt');
    const figures = judgeCorpus(entries, 'block');
    print('malicious corpus', figures);
    expect(figures.total).toBeGreaterThanOrEqual(500);
    expect(figures.bySection.size).toBeGreaterThanOrEqual(15);
    expect(figures.wrong).toEqual([]);
  });

  it('refuses fewer than 0.1% of the benign corpus', () => {
    const entries = readUrlCorpus('benign.txt');
    const figures = judgeCorpus(entries, 'allow');
    print('benign corpus', figures);
    console.log(
      `benign refusal rate: ${percent(figures.blocked, figures.total)} (gate: < ${MAX_BENIGN_REFUSAL * 100}%)`,
    );
    expect(figures.total).toBeGreaterThanOrEqual(500);
    expect(figures.blocked / figures.total, figures.wrong.join('\n')).toBeLessThan(MAX_BENIGN_REFUSAL);
  });
});
