import { readFileSync } from 'node:fs';

// The URL corpora under test/fixtures/url-corpus/: one URL a line, grouped
// under "# technique: <name>" (or "# kind: <name>") headings, other "#" lines
// comments. \u{XXXX} stands for that code point, so that bidi, zero-width
// and control characters are never written raw in the file.

export const URL_CORPUS_DIR = new URL('../fixtures/url-corpus/', import.meta.url);

export interface CorpusEntry {
  section: string;
  url: string;
  line: number;
}

export function readUrlCorpus(name: 'malicious.txt' | 'benign.txt'): CorpusEntry[] {
  const entries: CorpusEntry[] = [];
  let section = '(none)';
  readFileSync(new URL(name, URL_CORPUS_DIR), 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const heading = /^# (?:technique|kind): (.+)$/.exec(text);
      if (heading) section = heading[1]!.trim();
      if (text.trim() === '' || text.startsWith('#')) return;
      const url = text.replace(/\\u\{([0-9a-f]{1,6})\}/gi, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)));
      entries.push({ section, url, line: i + 1 });
    });
  return entries;
}
