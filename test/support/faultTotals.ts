import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { printTotals, type RunFigures } from './faultFigures.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where each faults run appends its figures (one JSON line), for the whole suite's total. */
    faultFiguresFile: string;
  }
}

// The faults project's global setup: the files run in separate workers, so each run's figures go
// to one file, and the suite's total is printed once every file is done.
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'broker-faults-figures-'));
  const file = join(dir, 'figures.jsonl');
  project.provide('faultFiguresFile', file);
  return async () => {
    const lines = (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
    printTotals(
      'suite',
      lines.map((l) => JSON.parse(l) as RunFigures),
    );
    await rm(dir, { recursive: true, force: true });
  };
}
