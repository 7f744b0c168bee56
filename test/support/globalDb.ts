import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embeddedPostgres.js';
import { createLogger } from '../../src/shared/logger.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    /** DATABASE_POOLER_URL: a transaction-mode pooler in front of databaseUrl (the PgBouncer pass), or ''. */
    poolerUrl: string;
  }
}

// One Postgres per test run: the server named by DATABASE_URL (CI's second
// pass), else an embedded one in a temporary folder. Each test file then
// works in its own schema (test/support/testDb.ts).
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env['DATABASE_URL'];
  project.provide('poolerUrl', process.env['DATABASE_POOLER_URL'] ?? '');
  if (external) {
    project.provide('databaseUrl', external);
    return async () => undefined;
  }
  const dir = await mkdtemp(join(tmpdir(), 'broker-test-pg-'));
  await chmod(dir, 0o711);
  const pg = await startEmbeddedPostgres(dir, createLogger({ level: 'warn' }));
  project.provide('databaseUrl', pg.url.reveal());
  return async () => {
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
