import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { verifyChain } from '../../src/ledger/chainVerifyRepo.js';
import type { FaultPoint } from '../../src/shared/faultPoints.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { devStackPorts, runTs, type BrokerProcess } from './brokerProcess.js';
import type { BrokerStack } from './brokerStack.js';
import { tokenFor } from './mcpWire.js';

// The faults suite's broker: `src/main.ts` as `npm start` runs it (its development identity provider
// and Report Service in the same process, state under DATA_DIR), in its own process, on a database
// of its own on the run's Postgres, so SIGKILL takes the broker and its provider down together and
// leaves the database up. Every start of one FaultBroker keeps the same ports, folder and database.

export interface FaultStart {
  /** BROKER_FAULT_POINT: the process kills itself there. */
  faultPoint?: FaultPoint;
  /** SECRET_KEYS (default: the development keys in DATA_DIR). */
  secretKeys?: string;
  /** How often each instance sweeps (default 60 s, so no sweep runs unless a scenario asks). */
  sweepIntervalMs?: number;
  /** LEGACY_URL_ELICITATION (default nested). */
  legacy?: 'nested' | 'error';
}

export interface ReportSeen {
  title: string;
  /** The Idempotency-Key it was created with (the receipt id, for an accepted operation). */
  key: string | undefined;
}

export interface FaultBroker {
  url: string;
  /** Its DATA_DIR (development keys, TLS, the development servers' saved state). */
  dataDir: string;
  /** What the support helpers (connectFlow.ts, mcpWire.ts, legacyFaultScenarios.ts) read of a stack. */
  stack: BrokerStack;
  fetch: Fetch;
  db: pg.Pool;
  /** Starts the broker and resolves once it is serving; the last started process is `current`. */
  start(options?: FaultStart): Promise<BrokerProcess>;
  current(): BrokerProcess | undefined;
  /** Stops the current process as an operator does (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Resolves once the current process killed itself at `point` (rejects if it ended otherwise). */
  killedAt(point: FaultPoint): Promise<void>;
  /** An MCP access token of a demo user from the running identity provider. */
  token(login: string): Promise<string>;
  /** What the Report Service created (its own saved state: each report and the key it came with). */
  reportsSeen(): Promise<ReportSeen[]>;
  /** What the GitHub-like provider created: its issues' titles (it honours a key too, but GitHub does not). */
  issuesSeen(): Promise<{ title: string }[]>;
  /** The ledger's chain checked as `broker ledger verify` does; undefined when intact. */
  ledgerBreak(): Promise<unknown>;
  /** Milliseconds each start took to serve. */
  startTimes: number[];
  close(): Promise<void>;
}

/** A broker for one scenario: a database created on `adminUrl`'s server, a data folder, fixed ports. */
export async function createFaultBroker(adminUrl: string): Promise<FaultBroker> {
  const database = `faults_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  url.search = '';
  const db = new pg.Pool({ connectionString: url.href, max: 2 });
  // DROP DATABASE … WITH (FORCE) at the end ends this pool's last connections from the server side.
  db.on('error', () => undefined);
  const dataDir = await mkdtemp(join(tmpdir(), 'broker-faults-'));
  await chmod(dataDir, 0o711);
  const ports = await devStackPorts();
  const brokerUrl = `https://127.0.0.1:${ports.PORT}`;
  let fetch: Fetch | undefined;
  let caPem = '';
  let process: BrokerProcess | undefined;
  const started: BrokerProcess[] = [];
  const startTimes: number[] = [];

  // The fields the support helpers use; the rest of BrokerStack is an in-process stack's.
  const stack = {
    brokerUrl,
    secondUrl: brokerUrl,
    mcpResourceUrl: `${brokerUrl}/mcp`,
    dev: { idp: { issuer: `https://127.0.0.1:${ports.DEV_IDP_PORT}` } },
    get fetch() {
      if (!fetch) throw new Error('start the broker first');
      return fetch;
    },
    get tls() {
      return { caPem };
    },
  } as unknown as BrokerStack; // a partial stack: only the members above are read through it

  const broker: FaultBroker = {
    url: brokerUrl,
    dataDir,
    stack,
    get fetch() {
      return stack.fetch;
    },
    db,
    startTimes,
    async start(options = {}) {
      const began = performance.now();
      process = runTs('src/main.ts', [], {
        DATA_DIR: dataDir,
        DATABASE_URL: url.href,
        ...ports,
        LOG_LEVEL: 'warn',
        // A host's retry waits this long for an operation another (dead) caller holds, then calls again.
        RETRY_WAIT_MS: '5000',
        LEGACY_WAIT_MS: '20000',
        LEGACY_URL_ELICITATION: options.legacy ?? 'nested',
        SWEEP_INTERVAL_MS: String(options.sweepIntervalMs ?? 60_000),
        ...(options.faultPoint ? { BROKER_FAULT_POINT: options.faultPoint } : {}),
        ...(options.secretKeys ? { SECRET_KEYS: options.secretKeys } : {}),
      });
      started.push(process);
      await process.waitFor('Connect Broker is running.', 60_000);
      startTimes.push(performance.now() - began);
      if (!fetch) {
        caPem = await readFile(join(dataDir, 'tls', 'ca.pem'), 'utf8');
        fetch = createFetch({ extraCaPems: [caPem] });
      }
      return process;
    },
    current: () => process,
    async stop() {
      if (!process) return;
      process.child.kill('SIGTERM');
      const { code } = await process.exited;
      if (code !== 0) throw new Error(`the broker stopped with ${code}:\n${process.output()}`);
    },
    async killedAt(point) {
      const running = process;
      if (!running) throw new Error('no broker started');
      const { signal } = await running.exited;
      if (signal !== 'SIGKILL' || !running.output().includes(`fault point reached: ${point}`))
        throw new Error(`the broker ended with ${signal ?? 'an exit'}, not at ${point}:\n${running.output()}`);
    },
    token: (login) => tokenFor(stack, login),
    async reportsSeen() {
      const saved = JSON.parse(await readFile(join(dataDir, 'report-service.json'), 'utf8').catch(() => '{}')) as {
        reports?: { id: string; title: string }[];
        idempotency?: { key: string; reportId: string }[];
      };
      return (saved.reports ?? []).map((r) => ({
        title: r.title,
        key: saved.idempotency?.find((i) => i.reportId === r.id)?.key,
      }));
    },
    async issuesSeen() {
      const saved = JSON.parse(await readFile(join(dataDir, 'dev-github.json'), 'utf8').catch(() => '{}')) as {
        issues?: { title: string }[];
      };
      return (saved.issues ?? []).map((i) => ({ title: i.title }));
    },
    ledgerBreak: async () => (await verifyChain(db)).firstBreak,
    async close() {
      for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await Promise.all(started.map((p) => p.exited));
      await db.end();
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return broker;
}
