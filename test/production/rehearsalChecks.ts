import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Rehearsal } from './rehearsalRun.js';

// What the rehearsal's steps share: the step itself (named, timed, its failure naming it) and the
// reads its assertions make.

/** Runs one named step; a failure names the step, and the broker's last output when there is one. */
export async function step<T>(name: string, run: () => Promise<T>, rehearsal?: Rehearsal): Promise<T> {
  const started = Date.now();
  try {
    const result = await run();
    process.stderr.write(`${rehearsal ? `[${rehearsal.mode}] ` : ''}${name}: ${Date.now() - started} ms\n`);
    return result;
  } catch (err) {
    const output = rehearsal ? `\n--- broker output ---\n${rehearsal.broker.output().slice(-3000)}` : '';
    throw new Error(
      `${rehearsal ? `[${rehearsal.mode}] ` : ''}step "${name}" failed: ${(err as Error).message}${output}`,
      {
        cause: err,
      },
    );
  }
}

/** The outcome of every receipt of `tool`'s operations (one per accepted operation). */
export const receiptsOf = async (r: Rehearsal, tool: string) =>
  (
    await r.db.query<{ outcome_status: string }>(
      `SELECT r.outcome_status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id
       WHERE n.tool = $1`,
      [tool],
    )
  ).rows.map((row) => row.outcome_status);

/** The devDependencies of the image's package.json that its node_modules holds (a pruned image: none). */
export async function devDependenciesIn(image: string): Promise<string[]> {
  const { devDependencies = {} } = JSON.parse(await readFile(join(image, 'package.json'), 'utf8')) as {
    devDependencies?: Record<string, string>;
  };
  return Object.keys(devDependencies).filter((name) => existsSync(join(image, 'node_modules', name)));
}
