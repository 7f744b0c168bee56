import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres } from '../src/db/embeddedPostgres.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { seedDevelopmentData } from '../src/dev/devSeed.js';
import { loadOrCreateDevSecrets } from '../src/dev/devSecrets.js';
import { githubDevProvider, reportServiceProvider, startLocalDevStack, type DevStack } from '../src/dev/devStack.js';
import { createFetch, type Fetch } from '../src/shared/httpClient.js';
import { createLogger } from '../src/shared/logger.js';
import type { Secret } from '../src/shared/secret.js';
import { loadOrCreateLocalTls } from '../src/tls/localCa.js';
import { createRender } from '../src/web/render.js';
import type { BrokerForm } from './brokerModules.js';
import type { FlowEnv } from './flowEnv.js';
import type { BrokerStats, FromBroker, ToBroker } from './flowIpc.js';
import type { Quotas } from '../src/config/limits.js';

export interface FlowStack {
  /** e.g. https://127.0.0.1:40123 (the broker process). */
  brokerUrl: string;
  /** The development servers, the GitHub-like provider among them. */
  dev: DevStack;
  /** Trusts the bench's development CA. */
  fetch: Fetch;
  /** The servers' certificate (a browser pins it: test/support/chromium.ts). */
  certPem: string;
  /** The bench's own pool on the bench schema; its queries are not the broker's and are not counted. */
  pool: Pool;
  /** Where the data lives, for the report. */
  database: string;
  /** The broker's pool size. */
  poolMax: number;
  /** The code the broker process runs (bench/brokerModules.ts). */
  form: BrokerForm;
  broker: { pid: number; openWindow(): Promise<void>; stats(): Promise<BrokerStats> };
  /** Error lines the development servers and embedded Postgres logged. */
  devErrors: string[];
  /** Stops everything and removes the temporary folder (and the schema); safe to call twice. */
  close(): Promise<void>;
}

const BROKER_ENTRY = fileURLToPath(new URL('./flowBroker.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const POOL_MAX = 10;

/**
 * Postgres (embedded in a temporary folder, or DATABASE_URL) with the real
 * migrations in a schema of its own, the development identity provider, the
 * Report Service and the GitHub-like provider in this process (configured as
 * npm start configures them), and the broker in a child process
 * (bench/flowBroker.ts), assembled from `options.form`'s modules (tsx by default; `compiled`
 * needs `compiledDir`). The broker listens first, so the development servers
 * know its redirect URIs; then it is configured over IPC.
 */
export async function startFlowStack(
  env: FlowEnv,
  options: { quotas?: Partial<Quotas>; form?: BrokerForm; compiledDir?: string } = {},
): Promise<FlowStack> {
  const form = options.form ?? 'tsx';
  if (form === 'compiled' && !options.compiledDir) throw new Error('a compiled broker needs compiledDir');
  const closers: (() => Promise<unknown>)[] = [];
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const closer of closers.reverse())
        await closer().catch((err: unknown) => process.stderr.write(`flow bench: cleanup failed: ${String(err)}\n`));
    })());
  try {
    const dir = await mkdtemp(join(tmpdir(), 'flow-bench-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    await chmod(dir, 0o711); // as root, Postgres runs as `postgres` and must traverse this folder
    const devErrors: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        devErrors.push(chunk.toString('utf8').trim());
        done();
      },
    });
    const logger = createLogger({ level: 'error', name: 'flow-bench' }, sink);
    const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
    const secrets = await loadOrCreateDevSecrets(dir);

    let url: Secret;
    let database: string;
    if (env.databaseUrl) {
      url = env.databaseUrl;
      database = 'DATABASE_URL';
    } else {
      const embedded = await startEmbeddedPostgres(join(dir, 'postgres'), logger);
      closers.push(embedded.stop);
      url = embedded.url;
      database = 'embedded Postgres';
    }
    const schema = `bench_flow_${randomBytes(5).toString('hex')}`;
    const admin = createPool({ url, poolMax: 1 }, logger);
    closers.push(() => admin.end());
    await admin.query(`CREATE SCHEMA ${schema}`);
    // An embedded cluster goes with the temporary folder; a server named by DATABASE_URL keeps nothing of ours.
    if (env.databaseUrl) closers.push(() => admin.query(`DROP SCHEMA ${schema} CASCADE`));
    const pool = createPool({ url, poolMax: 4, schema }, logger);
    closers.push(() => pool.end());
    await migrate(pool);

    const child = startBroker(dir, form, options.compiledDir ?? '');
    closers.push(() => child.stop());
    const brokerUrl = `https://127.0.0.1:${await child.listening}`;
    const dev = await startLocalDevStack({
      tls,
      fetch: createFetch({ extraCaPems: [tls.caPem] }),
      secrets,
      render: createRender({ cache: true }),
      logger,
      brokerUrl,
      github: true,
    });
    closers.push(() => dev.close(0));
    await seedDevelopmentData(pool, dev.idp.issuer);
    await child.request(
      {
        type: 'configure',
        config: {
          databaseUrl: url.reveal(),
          schema,
          poolMax: POOL_MAX,
          idpIssuer: dev.idp.issuer,
          idpClientId: dev.idp.brokerClientId,
          providers: [reportServiceProvider(dev, secrets), githubDevProvider(dev.github!)],
          ...(options.quotas ? { quotas: options.quotas } : {}),
        },
      },
      'ready',
    );

    return {
      brokerUrl,
      dev,
      fetch: createFetch({ extraCaPems: [tls.caPem], timeoutMs: 30_000 }),
      certPem: tls.certPem,
      pool,
      database: `${database}, schema ${schema}`,
      poolMax: POOL_MAX,
      form,
      broker: {
        pid: child.pid,
        openWindow: async () => void (await child.request({ type: 'window' }, 'window-open')),
        stats: async () =>
          ((await child.request({ type: 'stats' }, 'stats')) as Extract<FromBroker, { type: 'stats' }>).stats,
      },
      devErrors,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

interface BrokerChild {
  pid: number;
  listening: Promise<number>;
  request(message: ToBroker, answer: FromBroker['type']): Promise<FromBroker>;
  stop(): Promise<void>;
}

function startBroker(dir: string, form: BrokerForm, compiledDir: string): BrokerChild {
  const child: ChildProcess = fork(BROKER_ENTRY, [dir, form, compiledDir], {
    cwd: REPO_ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const next = (type: FromBroker['type']) =>
    new Promise<FromBroker>((resolve, reject) => {
      const onMessage = (message: FromBroker) => {
        if (message.type !== type && message.type !== 'failed') return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        if (message.type === 'failed') reject(new Error(`broker process: ${message.message}`));
        else resolve(message);
      };
      const onExit = (code: number | null) => {
        child.off('message', onMessage);
        reject(new Error(`the broker process exited (${code}) before answering ${type}`));
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  return {
    pid: child.pid ?? -1,
    listening: next('listening').then((m) => (m as Extract<FromBroker, { type: 'listening' }>).port),
    request(message, answer) {
      const answered = next(answer);
      child.send(message);
      return answered;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      try {
        if (child.connected) {
          await this.request({ type: 'stop' }, 'stopped').catch(() => undefined);
          if (child.connected) child.disconnect();
        } else child.kill('SIGTERM');
        await exited;
      } finally {
        clearTimeout(killer);
      }
    },
  };
}
