import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive } from './runLock.js';

// Where the development service listens, kept in its data folder (`service.json`) while it runs, so
// the CLI started beside it (`npm run broker -- …`) reaches the same ports whatever PORT it was given.

/** The settings that say where the service is: its address and the development servers' ports. */
export const SERVICE_SETTINGS = [
  'PORT',
  'PUBLIC_URL',
  'DEV_IDP_PORT',
  'DEV_REPORTS_PORT',
  'DEV_GITHUB_PORT',
  'DEV_UPSTREAM_PORT',
] as const;
type ServiceSetting = (typeof SERVICE_SETTINGS)[number];

const FILE = 'service.json';

/** Records where this process listens; the returned function removes the record (at stop). */
export async function recordService(
  dataDir: string,
  where: Record<ServiceSetting, string>,
): Promise<() => Promise<void>> {
  const path = join(dataDir, FILE);
  await writeFile(path, `${JSON.stringify({ pid: process.pid, ...where }, null, 2)}\n`, { mode: 0o600 });
  return () => rm(path, { force: true });
}

/**
 * `env` with the settings of the service running with this data folder; `env` as it is when none runs
 * (no record, or its process is gone), or when it sets any of them itself: it then names another service.
 */
export function withRunningService(
  dataDir: string,
  env: Record<string, string | undefined>,
): Record<string, string | undefined> {
  if (SERVICE_SETTINGS.some((name) => env[name] !== undefined)) return env;
  let record: unknown;
  try {
    record = JSON.parse(readFileSync(join(dataDir, FILE), 'utf8'));
  } catch {
    return env;
  }
  if (typeof record !== 'object' || record === null) return env;
  const { pid } = record as { pid?: unknown };
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return env;
  const found: Record<string, string> = {};
  for (const name of SERVICE_SETTINGS) {
    const value = (record as Record<string, unknown>)[name];
    if (typeof value === 'string') found[name] = value;
  }
  return { ...env, ...found };
}
