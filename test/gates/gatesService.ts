import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runningEmbeddedPostgresUrl } from '../../src/db/embeddedPostgres.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import type { BrokerStack } from '../support/brokerStack.js';
import { devStackPorts, runTs, type BrokerProcess } from '../support/brokerProcess.js';

// The service as the README starts it (`npm start`: src/main.ts in its own process, development
// mode with its identity provider and Report Service, HTTPS with a generated CA), on fresh ports
// and an empty data folder; Postgres embedded, or a schema of its own on DATABASE_URL when given.
// Everything it writes to stdout and stderr is kept, across restarts, for the log scans.

export interface GatesService {
  /**
   * What the shared test helpers (mcpWire, sdkClient, connectFlow, legacySdkClient) read of a stack:
   * its URLs, a fetch trusting its CA, the CA, the identity provider's issuer. Nothing else is set.
   */
  stack: BrokerStack;
  env: Record<string, string>;
  dataDir: string;
  fetch: Fetch;
  /** The server certificate (Chromium trusts exactly its key). */
  certPem: string;
  /** The service's database, read by the suite (never written, but by the self-test's injected faults). */
  db: pg.Pool;
  /** Everything every process of the service printed so far. */
  output(): string;
  /** Stops the broker (SIGTERM, as Ctrl-C) and starts it again on the same data with `extra` over its environment. */
  restart(extra: Record<string, string>): Promise<void>;
  /** Runs `broker <args>` as an operator would, against this deployment; resolves with its exit code and output. */
  cli(args: string[], extra?: Record<string, string>): Promise<{ code: number | null; out: string }>;
  close(): Promise<void>;
}

export async function startGatesService(settings: Record<string, string>): Promise<GatesService> {
  const dataDir = await mkdtemp(join(tmpdir(), 'broker-gates-'));
  await chmod(dataDir, 0o711); // as a fresh `.data/` would be
  const ports = await devStackPorts();
  const external = process.env['DATABASE_URL'];
  const schema = `gates_${Math.random().toString(36).slice(2, 10)}`;
  let admin: pg.Client | undefined;
  let databaseUrl: string | undefined;
  if (external) {
    admin = new pg.Client({ connectionString: external });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(external);
    url.searchParams.set('options', `-c search_path=${schema}`);
    databaseUrl = url.href;
  }
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    ...ports, // DEV_UPSTREAM_PORT: the development upstream MCP server, where the stack has one
    LOG_LEVEL: 'debug',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...settings,
  };
  const runs: BrokerProcess[] = [];
  const start = async (extra: Record<string, string>) => {
    const broker = runTs('src/main.ts', [], { ...env, ...extra });
    runs.push(broker);
    await broker.waitFor('Press Ctrl-C to stop.', 90_000);
  };
  // A service that does not start leaves nothing behind (afterAll has no service to close).
  await start({}).catch(async (err: unknown) => {
    if (admin) await admin.query(`DROP SCHEMA ${schema} CASCADE`).finally(() => admin.end());
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  });

  const caPem = await readFile(join(dataDir, 'tls', 'ca.pem'), 'utf8');
  const certPem = await readFile(join(dataDir, 'tls', 'server.pem'), 'utf8');
  const fetch = createFetch({ extraCaPems: [caPem] });
  // The embedded cluster listens on a new port at each start: the pool is opened again after a restart.
  const openDb = async () => {
    const url = databaseUrl ?? (await runningEmbeddedPostgresUrl(join(dataDir, 'postgres')))?.reveal();
    if (!url) throw new Error('the embedded Postgres of the service is not running');
    const pool = new pg.Pool({ connectionString: url, max: 3 });
    pool.on('error', () => undefined); // an idle connection ended by the service's stop
    return pool;
  };
  let db = await openDb();
  const brokerUrl = `https://127.0.0.1:${ports.PORT}`;
  // Only the members the shared helpers read (see the interface); they are typed for the in-process stack.
  const stack = {
    brokerUrl,
    mcpResourceUrl: `${brokerUrl}/mcp`,
    fetch,
    tls: { caPem },
    dev: { idp: { issuer: `https://127.0.0.1:${ports.DEV_IDP_PORT}` } },
    logs: [],
  } as unknown as BrokerStack;

  const output = () => runs.map((r) => r.output()).join('\n');
  return {
    stack,
    env,
    dataDir,
    fetch,
    certPem,
    get db() {
      return db;
    },
    output,
    async restart(extra) {
      await db.end();
      const running = runs.at(-1)!;
      running.child.kill('SIGTERM');
      const { code } = await running.exited;
      if (code !== 0) throw new Error(`the broker stopped with ${String(code)}:\n${running.output()}`);
      await start(extra);
      db = await openDb();
    },
    async cli(args, extra = {}) {
      const cli = runTs('src/cli/broker.ts', args, { ...env, ...extra });
      const { code } = await cli.exited;
      return { code, out: cli.output() };
    },
    async close() {
      await db.end();
      for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGTERM');
      await Promise.all(runs.map((r) => r.exited));
      if (admin) {
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
        await admin.end();
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
