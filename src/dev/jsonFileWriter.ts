import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Saves JSON snapshots to one file: writes run one after another, and each
 * writes a temp file and renames it over the target, so a crash leaves the
 * old or the new file, never half of one. Development persistence only.
 */
export function createJsonFileWriter(filePath: string): (snapshot: () => unknown) => Promise<void> {
  let queue: Promise<void> = Promise.resolve();
  return (snapshot) => {
    // The snapshot is taken when the write runs, so a burst of changes ends with the latest state.
    const next = queue.then(async () => {
      await mkdir(dirname(filePath), { recursive: true });
      const temp = `${filePath}.${randomUUID()}.tmp`;
      await writeFile(temp, JSON.stringify(snapshot()), { mode: 0o600 });
      await rename(temp, filePath);
    });
    queue = next.catch(() => undefined);
    return next;
  };
}

/** The parsed JSON of `filePath`, or undefined when the file does not exist. */
export async function readJsonFile(filePath: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(filePath, 'utf8'));
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return undefined;
    throw err;
  }
}
