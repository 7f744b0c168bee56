import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

export interface RunLock {
  release(): Promise<void>;
}

export class AlreadyRunningError extends Error {
  override name = 'AlreadyRunningError';
}

/**
 * One broker per data folder: `<dataDir>/broker.pid` is created exclusively.
 * A lock whose process is gone (a crash, kill -9) is taken over.
 */
export async function acquireRunLock(dataDir: string): Promise<RunLock> {
  // 0711: others may traverse (an embedded Postgres running as `postgres` needs to) but not list.
  await mkdir(dataDir, { recursive: true, mode: 0o711 });
  const path = join(dataDir, 'broker.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return { release: () => rm(path, { force: true }) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
        throw new AlreadyRunningError(
          `Another broker (pid ${pid}) is already running with data folder ${dataDir}. Stop it first (Ctrl-C in its terminal), or give this one another DATA_DIR and PORT.`,
        );
      }
      await rm(path, { force: true });
    }
  }
  throw new AlreadyRunningError(`Could not take the run lock ${path}`);
}

/** Whether a process with this id runs (one of another user counts: signalling it is refused, not unknown). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
