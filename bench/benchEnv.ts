import { Secret } from '../src/shared/secret.js';

export interface BenchEnv {
  /** Measured seconds per case (BENCH_SECONDS, default 8; bench:refresh 45); the warm-up is not counted. */
  measureSeconds: number;
  warmupSeconds: number;
  /** An existing Postgres (DATABASE_URL); the bench works in its own schema there and drops it. */
  databaseUrl: Secret | undefined;
}

/**
 * The bench's only reader of the environment: a development harness, like
 * test/, so it reads two variables directly instead of through loadConfig.
 */
export function readBenchEnv(env: Readonly<Record<string, string | undefined>>, defaultSeconds = 8): BenchEnv {
  const raw = env['BENCH_SECONDS'];
  const measureSeconds = raw === undefined || raw === '' ? defaultSeconds : Number(raw);
  if (!Number.isFinite(measureSeconds) || measureSeconds <= 0 || measureSeconds > 600) {
    throw new Error(`BENCH_SECONDS must be a number of seconds between 0 and 600, got ${JSON.stringify(raw)}`);
  }
  const url = env['DATABASE_URL'];
  return { measureSeconds, warmupSeconds: 2, databaseUrl: url ? new Secret(url) : undefined };
}
