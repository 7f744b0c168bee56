import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateDevSecrets, type DevSecrets } from '../src/dev/devSecrets.js';
import { createFetch, type Fetch } from '../src/shared/httpClient.js';
import type { Logger } from '../src/shared/logger.js';
import type { Secret } from '../src/shared/secret.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../src/tls/localCa.js';
import { createRender, type Render } from '../src/web/render.js';
import { openBenchDb, type BenchDb } from './benchDb.js';

/** What an in-process bench stack starts from: a temporary folder's TLS and development secrets, and a database. */
export interface BenchResources {
  tls: TlsMaterial;
  secrets: DevSecrets;
  /** Trusts the bench's CA (TLS verified). */
  fetch: Fetch;
  render: Render;
  db: BenchDb;
  /** Runs `closer` at close, before everything deferred earlier. */
  defer(closer: () => Promise<unknown>): void;
  /** Closes what was deferred, last first, then the database and the folder; idempotent (the end of the run and a Ctrl-C may both ask). */
  close(): Promise<void>;
}

export async function openBenchResources(options: {
  databaseUrl: Secret | undefined;
  logger: Logger;
  /** The temporary folder's name prefix, e.g. `mcp-bench-`. */
  prefix: string;
}): Promise<BenchResources> {
  const { logger } = options;
  const closers: (() => Promise<unknown>)[] = [];
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const closer of closers.reverse())
        await closer().catch((err: unknown) => logger.warn({ err }, 'bench cleanup step failed'));
    })());
  try {
    const dir = await mkdtemp(join(tmpdir(), options.prefix));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    // We may run as root while Postgres runs as `postgres`, which must traverse this folder.
    await chmod(dir, 0o711);
    const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
    const secrets = await loadOrCreateDevSecrets(dir);
    const db = await openBenchDb(options.databaseUrl, dir, logger);
    closers.push(() => db.close());
    return {
      tls,
      secrets,
      fetch: createFetch({ extraCaPems: [tls.caPem] }),
      render: createRender({ cache: true }),
      db,
      defer: (closer) => void closers.push(closer),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
