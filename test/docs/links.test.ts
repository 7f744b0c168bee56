import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/brokerProcess.js';

// Every link of README.md and docs/ that points into the repository resolves: the file exists, and a
// #fragment names a heading of it (GitHub's anchors: lower case, punctuation dropped, spaces as -).
const pages = ['README.md', ...readdirSync(join(repoRoot, 'docs')).map((f) => `docs/${f}`)].filter((p) =>
  p.endsWith('.md'),
);

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    let unique = slug;
    for (let n = 1; anchors.has(unique); n++) unique = `${slug}-${n}`;
    anchors.add(unique);
  }
  return anchors;
}

function linksOf(markdown: string): string[] {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...withoutCode.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe('links in README.md and docs/', () => {
  it.each(pages)('%s links only to files and headings that exist', (page) => {
    const from = join(repoRoot, page);
    const broken: string[] = [];
    for (const link of linksOf(readFileSync(from, 'utf8'))) {
      if (/^[a-z][a-z+.-]*:/i.test(link)) continue;
      const [path = '', fragment] = link.split('#');
      const target = path === '' ? from : resolve(dirname(from), decodeURIComponent(path));
      if (!target.startsWith(repoRoot) || !existsSync(target)) {
        broken.push(`${link}: no such file`);
        continue;
      }
      if (fragment !== undefined && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(fragment))
        broken.push(`${link}: no such heading`);
    }
    expect(broken).toEqual([]);
  });

  it('reads a README of at most 250 lines', () => {
    expect(readFileSync(join(repoRoot, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(250);
  });
});
