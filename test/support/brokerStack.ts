import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RequestListener } from 'node:http';
import { readMigrations } from '../../src/db/migrate.js';
import type { Pool } from '../../src/db/pool.js';
import { seedDevelopmentData } from '../../src/dev/devSeed.js';
import { loadOrCreateDevSecrets, type DevSecrets } from '../../src/dev/devSecrets.js';
import {
  devUpstreamProvider,
  githubDevProvider,
  reportServiceProvider,
  startLocalDevStack,
  type DevStack,
} from '../../src/dev/devStack.js';
import type { Metrics } from '../../src/metrics/metrics.js';
import { createOidcClient } from '../../src/oauth/oauthClient.js';
import { loadConfig } from '../../src/config/config.js';
import { listenHttp, listenHttps } from '../../src/runtime/httpsServer.js';
import { createEgressGuard } from '../../src/shared/egressGuard.js';
import { systemClock, type Clock } from '../../src/shared/clock.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { createRequestFetch } from '../../src/shared/requestFetch.js';
import { Secret } from '../../src/shared/secret.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { createBrokerServer, type BrokerServer, type ServerSettings } from '../../src/server.js';
import { createKeyRegistry, type KeyRegistry } from '../../src/secrets/keyAgreement.js';
import type { Tool } from '../../src/mcp/defineTool.js';
import type { McpToolDeps } from '../../src/mcp/toolDeps.js';
import { createRender } from '../../src/web/render.js';
import type { ResealProgress } from '../../src/jobs/reseal.js';
import { capturedLogger } from './capturedLogger.js';
import { createTestDb, type TestDb, type TestDbOptions } from './testDb.js';
import { atUrl, stackSettings } from './testSettings.js';
import type { LegacyLimits, Quotas, RateLimit } from '../../src/config/limits.js';

export interface BrokerStack {
  /** e.g. https://127.0.0.1:40123; behind a proxy (`behindProxy`), the proxy's public URL. */
  brokerUrl: string;
  /** The first instance's own listener, what a proxy in front forwards to (http:// when `behindProxy.plainHttp`). */
  instanceUrl: string;
  /** A second broker instance on the same database and keys, on its own port (POST `${secondUrl}/mcp`). */
  secondUrl: string;
  mcpResourceUrl: string;
  dev: DevStack;
  /** The stack's generated development secrets (client secrets, keys). */
  secrets: DevSecrets;
  db: TestDb;
  tls: TlsMaterial;
  /** Every log line the broker and the development servers wrote (debug level). */
  logs: string[];
  /** A fetch that trusts the stack's CA. */
  fetch: Fetch;
  /** The stack's folder: its CA is `${dataDir}/tls/ca.pem` (for the CLI's DATA_DIR). */
  dataDir: string;
  /** The first instance's settings (the second differs in `http.publicUrl` only). */
  settings: ServerSettings;
  /** The first instance's reconcile sweep (re-drives unknown outcomes). */
  reconcile(graceMs: number, batch: number): Promise<{ redriven: number; waiting: number }>;
  /** The first instance's re-seal pass (what the sweeper runs: values under an older key moved to the active one). */
  reseal(inBudget: () => boolean): Promise<ResealProgress>;
  /** The first instance's proactive refresh (renews access tokens about to expire). */
  refreshExpiring: BrokerServer['refreshExpiring'];
  /**
   * Both instances rebuilt with these SECRET_KEYS (the first active), on the same database, ports
   * and settings, as a rolling deploy of a key rotation does; `secrets.secretKeys` is left as it was.
   */
  restartWithKeys(keys: readonly { kid: string; key: string }[]): Promise<void>;
  /**
   * One instance (0: the first, 1: the second) rebuilt with these SECRET_KEYS, the other left running:
   * one step of a rolling deploy. With `keyRegistry`, it announces its keys before it serves, as main.ts does.
   */
  restartOneWithKeys(which: 0 | 1, keys: readonly { kid: string; key: string }[]): Promise<void>;
  /** One instance's re-seal pass, as its sweeper runs it. */
  resealOn(which: 0 | 1, inBudget: () => boolean): Promise<ResealProgress>;
  /** With `keyRegistry`: both instances announce their keys and read each other's, as their timers do. */
  announceKeys(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The broker as main.ts assembles it, on port 0, with the real development
 * identity provider and Report Service, and its own Postgres schema. Its
 * settings are loadConfig's defaults but for these options and the few
 * values testSettings.ts's stackSettings() names.
 */
export interface BrokerStackOptions {
  clock?: Clock;
  sessionTtlSeconds?: number;
  anonymous?: boolean;
  navigationTtlSeconds?: number;
  /** How long an MCP retry waits for a pending connection (default 2 s in tests). */
  retryWaitMs?: number;
  /** UPSTREAM_TIMEOUT_MS (default loadConfig's). */
  upstreamTimeoutMs?: number;
  /** Runs the development upstream MCP server (src/dev/devUpstream.ts) and configures it, as npm start does. */
  devUpstream?: boolean;
  /** LEGACY_URL_ELICITATION for this stack (default nested). */
  legacyUrlElicitation?: 'nested' | 'error';
  /** How long a nested legacy call waits for the user (default 10 s in tests). */
  legacyWaitMs?: number;
  /** Builds the first instance's metrics over its pool (default: a fresh registry per instance). */
  metrics?: (pool: Pool) => Metrics;
  /** METRICS_TOKEN for both instances (default: /metrics closed). */
  metricsToken?: string;
  /** WEBHOOK_URL and WEBHOOK_SECRET as loadConfig parses them (default: none); /ops reads it. */
  webhook?: ServerSettings['webhook'];
  /** LOGIN_RATE_BURST and LOGIN_RATE_PER_MINUTE (default: high, see testSettings.ts). */
  loginRateLimit?: RateLimit;
  /** LEGACY_MAX_SESSIONS and friends, in milliseconds, over loadConfig's defaults. */
  legacyLimits?: Partial<LegacyLimits>;
  /** HIGH_RISK_TOOLS for both instances. */
  highRiskTools?: readonly string[];
  /** QUOTA_* for both instances, over loadConfig's defaults. */
  quotas?: Partial<Quotas>;
  /** The issuer whose tokens /mcp accepts (default: the development identity provider). */
  mcpIssuer?: string;
  /** MCP token settings (MCP_SCOPE, MCP_TOKEN_AUDIENCE, …) over loadConfig's defaults, as their parsed slice. */
  mcp?: Partial<ServerSettings['mcp']>;
  /** The issuer browsers sign in with (default: the development identity provider). */
  signInIssuer?: string;
  /** Connection tools served beside the built-in ones (what TOOL_MODULES loads). */
  extraTools?: readonly Tool<McpToolDeps>[];
  /** The fetch the broker instances call providers with, built from the stack's (e.g. mapHosts in hostMap.ts, to reach emulators under real provider hosts). */
  brokerFetch?: (stackFetch: Fetch) => Fetch;
  /** More PROVIDERS_FILE entries beside the Report Service (a test's own OAuth servers, on the stack's TLS), once the broker's URL is known. */
  extraProviders?: (context: { brokerUrl: string; tls: TlsMaterial }) => Promise<unknown[]>;
  /** The Postgres server, and the instances' way to it (test/support/testDb.ts): default the run's, directly. */
  database?: Pick<TestDbOptions, 'url' | 'poolUrl'>;
  /** Each instance in the deployment's key registry (secrets/keyAgreement.ts), as main.ts runs it; default: none. */
  keyRegistry?: { liveMs: number };
  /** TRUST_PROXY for both instances, as an operator writes it (default: unset, no proxy trusted). */
  trustProxy?: string;
  /**
   * The first instance behind a proxy the test starts: PUBLIC_URL is the proxy's (`publicUrl`), and with
   * `plainHttp` it listens on plain HTTP as TLS_TERMINATED_BY_PROXY=true makes main.ts do.
   */
  behindProxy?: { publicUrl: string; plainHttp: boolean };
}

export async function startBrokerStack(options: BrokerStackOptions = {}): Promise<BrokerStack> {
  const dir = await mkdtemp(join(tmpdir(), 'broker-stack-'));
  const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
  const secrets = await loadOrCreateDevSecrets(dir);
  // The broker's egress as main.ts guards it, with the test mode's default EGRESS_ALLOW (loopback).
  const egress = createEgressGuard({ allow: loadConfig({ NODE_ENV: 'test' }).egress.allow });
  const fetch = createFetch({ extraCaPems: [tls.caPem], egress });
  const render = createRender({ cache: false });
  const { logger, logs } = capturedLogger();
  const db = await createTestDb(options.database);

  let handler: RequestListener = (_req, res) => res.writeHead(503).end();
  const behind = options.behindProxy;
  const broker = behind?.plainHttp
    ? await listenHttp((req, res) => handler(req, res), '127.0.0.1', 0, 'broker')
    : await listenHttps(tls, (req, res) => handler(req, res), '127.0.0.1', 0, 'broker');
  const instanceUrl = `${behind?.plainHttp ? 'http' : 'https'}://127.0.0.1:${broker.port}`;
  const brokerUrl = behind?.publicUrl ?? instanceUrl;
  const publicUrl = new URL(brokerUrl);
  const mcpResourceUrl = `${brokerUrl}/mcp`;
  const dev = await startLocalDevStack({
    tls,
    fetch,
    secrets,
    render,
    logger,
    brokerUrl,
    github: true,
    upstream: options.devUpstream ?? false,
  });
  await seedDevelopmentData(db.pool, dev.idp.issuer);
  const extra = options.extraProviders ? await options.extraProviders({ brokerUrl, tls }) : [];
  // The development providers npm start configures, then the test's own (a test's `github` replaces the development one).
  const own = new Set(extra.map((entry) => (entry as { id?: unknown }).id));
  const builtIn = [
    reportServiceProvider(dev, secrets),
    ...(dev.github && !own.has('github') ? [githubDevProvider(dev.github)] : []),
    ...(dev.upstream ? [devUpstreamProvider(dev.upstream)] : []),
  ];
  // As main.ts parses them: no upstream may be the broker's own origin or identity provider.
  const providers = parseProviders([...builtIn, ...extra], {
    allowLoopback: true,
    self: { publicUrl, issuer: dev.idp.issuer },
  });
  const servers: BrokerServer[] = [];
  const brokerFetch = options.brokerFetch ? options.brokerFetch(fetch) : fetch;
  // As main.ts builds it, unless the test routes the broker's requests itself.
  const upstreamFetch = options.brokerFetch ? brokerFetch : createRequestFetch({ extraCaPems: [tls.caPem], egress });
  const parsed = atUrl(stackSettings(options), publicUrl, mcpResourceUrl);
  // TRUST_PROXY as loadConfig parses it for a deployment.
  const trustProxy = loadConfig({ NODE_ENV: 'test', TRUST_PROXY: options.trustProxy }).http.trustProxy;
  const settings = { ...parsed, http: { ...parsed.http, trustProxy } };
  let secretKeys: readonly { kid: string; key: string }[] = secrets.secretKeys;
  const registries: (KeyRegistry | undefined)[] = [undefined, undefined];
  let generation = 0;
  // Requests each instance is still answering: a stopping instance drains them before it leaves the
  // key registry, as main.ts's does (its HTTPS server closes, then its closers run).
  const inFlight = new Map<BrokerServer, number>();
  const drained = async (server: BrokerServer) => {
    while ((inFlight.get(server) ?? 0) > 0) await new Promise((r) => setTimeout(r, 10));
  };
  const registryFor = async (which: 0 | 1, pool: Pool, keys: typeof secretKeys) => {
    if (!options.keyRegistry) return undefined;
    const registry = createKeyRegistry({
      db: pool,
      own: keys.map((k) => k.kid),
      liveMs: options.keyRegistry.liveMs,
      logger,
      instanceId: `instance-${which}-${(generation += 1)}`,
    });
    await registry.refresh();
    registries[which] = registry;
    return registry;
  };
  const listenerFor = (
    pool: Pool,
    publicUrl: URL,
    keys = secretKeys,
    keyAgreement?: KeyRegistry,
    at = servers.length,
  ): RequestListener => {
    // Through a transaction-mode pooler, each instance listens on a connection of its own, straight to Postgres.
    const listenPool = db.newDirectPool();
    const server = createBrokerServer({
      settings: atUrl(settings, publicUrl, mcpResourceUrl),
      pool,
      ...(listenPool ? { listenPool } : {}),
      logger,
      clock: options.clock ?? systemClock,
      render,
      oidc: createOidcClient({
        issuer: options.signInIssuer ?? dev.idp.issuer,
        clientId: dev.idp.brokerClientId,
        clientSecret: new Secret(secrets.brokerIdpClientSecret),
        fetch,
        allowLoopback: true,
      }),
      migrations,
      issuer: options.mcpIssuer ?? dev.idp.issuer,
      fetch: brokerFetch,
      upstreamFetch,
      secretKeys: keys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
      ...(keyAgreement ? { keyAgreement } : {}),
      version: 'test',
      providers,
      allowLoopback: true,
      ...(options.extraTools ? { extraTools: options.extraTools } : {}),
      ...(options.metrics && servers.length === 0 ? { metrics: options.metrics(pool) } : {}),
    });
    servers[at] = server;
    return (req, res) => {
      inFlight.set(server, (inFlight.get(server) ?? 0) + 1);
      res.on('close', () => inFlight.set(server, inFlight.get(server)! - 1));
      server.listener(req, res);
    };
  };
  const migrations = await readMigrations();
  handler = listenerFor(db.pool, publicUrl, secretKeys, await registryFor(0, db.pool, secretKeys));

  // A second broker instance: its own pool, listener and public URL; the same database, keys and MCP audience.
  let secondHandler: RequestListener = (_req, res) => res.writeHead(503).end();
  const second = await listenHttps(tls, (req, res) => secondHandler(req, res), '127.0.0.1', 0, 'broker 2');
  const secondUrl = `https://127.0.0.1:${second.port}`;
  const secondPool = db.newPool();
  secondHandler = listenerFor(secondPool, new URL(secondUrl), secretKeys, await registryFor(1, secondPool, secretKeys));

  return {
    brokerUrl,
    instanceUrl,
    secondUrl,
    mcpResourceUrl,
    dev,
    secrets,
    db,
    tls,
    logs,
    fetch,
    dataDir: dir,
    settings,
    reconcile: (graceMs, batch) => servers[0]!.reconcile(graceMs, batch),
    reseal: (inBudget) => servers[0]!.reseal(inBudget),
    refreshExpiring: (options) => servers[0]!.refreshExpiring(options),
    async restartWithKeys(keys) {
      const old = servers.splice(0);
      const oldRegistries = [...registries];
      secretKeys = keys;
      handler = listenerFor(db.pool, publicUrl, keys, await registryFor(0, db.pool, keys));
      secondHandler = listenerFor(secondPool, new URL(secondUrl), keys, await registryFor(1, secondPool, keys));
      await Promise.all(old.map((s) => drained(s).then(() => s.close())));
      for (const registry of oldRegistries) await registry?.leave();
    },
    async restartOneWithKeys(which, keys) {
      const old = servers[which]!;
      const oldRegistry = registries[which];
      const pool = which === 0 ? db.pool : secondPool;
      const next = listenerFor(
        pool,
        which === 0 ? publicUrl : new URL(secondUrl),
        keys,
        await registryFor(which, pool, keys),
        which,
      );
      if (which === 0) handler = next;
      else secondHandler = next;
      await drained(old);
      await old.close();
      await oldRegistry?.leave();
    },
    resealOn: (which, inBudget) => servers[which]!.reseal(inBudget),
    async announceKeys() {
      for (const registry of registries) await registry?.refresh();
    },
    async close() {
      await broker.close(0);
      await second.close(0);
      await Promise.all(servers.map((s) => s.close()));
      await dev.close(0);
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
