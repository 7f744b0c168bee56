import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { auditFormSchema } from '../../src/security/formAudit.js';

// The release gate for forms: every form of the sensitive corpus refused, every
// ordinary one admitted (test/fixtures/form-corpus/, one file per technique or
// language). The figures print on every run, in CI too.

const CORPUS = join(import.meta.dirname, '../fixtures/form-corpus');

const CorpusFileSchema = z.strictObject({
  expect: z.enum(['refuse', 'admit']),
  technique: z.string().min(1),
  language: z.string().min(1),
  description: z.string().min(1),
  cases: z.array(z.strictObject({ name: z.string().min(1), requestedSchema: z.unknown() })).min(1),
});

const files = readdirSync(CORPUS)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => {
    const parsed = CorpusFileSchema.safeParse(JSON.parse(readFileSync(join(CORPUS, name), 'utf8')));
    if (!parsed.success) throw new Error(`${name}: ${parsed.error.message}`);
    return { name, ...parsed.data };
  });

interface Tally {
  total: number;
  right: number;
}

function figures() {
  const rows = new Map<string, Tally>();
  const totals = { refuse: { total: 0, right: 0 }, admit: { total: 0, right: 0 } };
  const misses: string[] = [];
  for (const file of files) {
    const row = { total: 0, right: 0 };
    for (const c of file.cases) {
      const refused = !auditFormSchema(c.requestedSchema).admitted;
      const right = refused === (file.expect === 'refuse');
      row.total += 1;
      totals[file.expect].total += 1;
      if (right) {
        row.right += 1;
        totals[file.expect].right += 1;
      } else misses.push(`${file.name}: ${c.name} was ${refused ? 'refused' : 'admitted'}`);
    }
    rows.set(`${file.expect.padEnd(6)} ${file.technique.padEnd(34)} ${file.language.padEnd(5)}`, row);
  }
  return { rows, totals, misses };
}

const pct = ({ total, right }: Tally) => (total === 0 ? 'n/a' : `${((right / total) * 100).toFixed(1)}%`);

describe('the form corpus gate', () => {
  const { rows, totals, misses } = figures();

  it('prints its figures', () => {
    const lines = [...rows].map(([label, t]) => `  ${label} ${pct(t).padStart(6)} (${t.right}/${t.total})`);
    console.log(
      [
        'form-schema audit corpus (test/fixtures/form-corpus):',
        '  expect technique                          lang  right',
        ...lines,
        `  sensitive forms refused: ${pct(totals.refuse)} (${totals.refuse.right}/${totals.refuse.total}); target 100%`,
        `  ordinary forms admitted: ${pct(totals.admit)} (${totals.admit.right}/${totals.admit.total}); target 100%`,
      ].join('\n'),
    );
    expect(rows.size).toBe(files.length);
  });

  it('has both kinds, in every language the vocabulary covers', () => {
    const languages = (expect: string) =>
      new Set(files.filter((f) => f.expect === expect && f.technique.startsWith('ordinary')).map((f) => f.language));
    const refusedLanguages = new Set(files.filter((f) => f.technique === 'secret term').map((f) => f.language));
    for (const language of ['en', 'de', 'fr', 'es', 'pt', 'it', 'nl', 'zh', 'ja', 'ru']) {
      expect(refusedLanguages, language).toContain(language);
      expect(languages('admit'), language).toContain(language);
    }
    expect(totals.refuse.total).toBeGreaterThan(500);
    expect(totals.admit.total).toBeGreaterThan(100);
  });

  it('refuses 100% of the sensitive forms and admits 100% of the ordinary ones', () => {
    expect(misses).toEqual([]);
    expect(totals.refuse.right).toBe(totals.refuse.total);
    expect(totals.admit.right).toBe(totals.admit.total);
  });
});
