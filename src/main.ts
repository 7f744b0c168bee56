import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig, type Config } from './config/config.js';
import { startEmbeddedPostgres } from './db/embeddedPostgres.js';
import { migrate, readMigrations } from './db/migrate.js';
import { startSweeper } from './jobs/sweeps.js';
import { startPeriodic } from './shared/periodic.js';
import { PROACTIVE_REFRESH } from './jobs/proactiveRefresh.js';
import { startWebhookDelivery } from './events/webhookDelivery.js';
import { createPool } from './db/pool.js';
import { createMetrics } from './metrics/metrics.js';
import { createOidcClient } from './oauth/oauthClient.js';
import { banner, type BannerFacts } from './runtime/banner.js';
import { recordService } from './runtime/serviceRecord.js';
import { listenHttp, listenHttps } from './runtime/httpsServer.js';
import { AlreadyRunningError, acquireRunLock } from './runtime/runLock.js';
import { stopSignalHandler } from './runtime/stopSignals.js';
import { systemClock } from './shared/clock.js';
import { createEgressGuard } from './shared/egressGuard.js';
import { createFetch } from './shared/httpClient.js';
import { createRequestFetch } from './shared/requestFetch.js';
import { createLogger, type Logger } from './shared/logger.js';
import { armFaultPoint } from './shared/faultPoints.js';
import { Secret } from './shared/secret.js';
import { readTrustedCas } from './tls/trustedCas.js';
import { loadOrCreateLocalTls, type TlsMaterial } from './tls/localCa.js';
import { createKeyRegistry } from './secrets/keyAgreement.js';
import { createRender } from './web/render.js';
import { createBrokerServer } from './server.js';
import { startTracing } from './telemetry/tracing.js';
import type { Tool } from './mcp/defineTool.js';
import type { McpToolDeps } from './mcp/toolDeps.js';
import { tools } from './mcp/tools/registry.js';
import { loadToolModules, ToolModuleError } from './mcp/tools/toolModules.js';
import { ToolsFileError } from './mcp/declared/toolsFile.js';
import { highRiskToolNames, loadDeclaredTools } from './mcp/declared/toolsSetup.js';
import { ProviderConfigError } from './providers/providerConfig.js';
import { configuredProviders } from './providers/providersFile.js';

type Closer = { name: string; close: () => Promise<void> };

const RECONCILE_GRACE_MS = 60_000;
// Each instance announces its key ids this often, and counts as live for three announcements: a new key
// seals within about that long after the last instance holding only the old ones stopped.
const KEY_ANNOUNCE_MS = 10_000;
const KEY_LIVE_MS = 3 * KEY_ANNOUNCE_MS;

// The composition root: the only file that builds real infrastructure; everything else gets it passed in.
async function main(config: Readonly<Config>, logger: Logger, closers: Closer[]): Promise<void> {
  const dev = config.mode !== 'production';
  // Tracing only with an OTLP endpoint set: otherwise nothing is registered and every span is the
  // API's no-op. Closed last, so the spans of the stop itself are sent.
  if (config.telemetry) {
    const tracing = startTracing(config.telemetry, packageVersion());
    closers.push({ name: 'tracing', close: tracing.close });
    logger.info({ traces: config.telemetry.tracesUrl.origin }, 'tracing: spans are exported over OTLP');
  }
  // Configured providers are checked before anything starts: a bad entry stops start-up at once.
  const providersFile = configuredProviders(config);
  const providerEntries = await providersFile.entries();
  // The development identity provider's issuer is known once it runs: the second parse below checks it.
  const fileProviders = providersFile.parse(providerEntries, {
    publicUrl: config.http.publicUrl,
    issuer: config.oidc.issuer,
  });
  // So are the operator's tool modules: a module that does not load, or a clashing name, stops it too.
  const modules = await loadToolModules(config.toolModules, tools);
  // And the declared tools (TOOLS_FILE, or the development default): every problem in the file stops it.
  const declared = await loadDeclaredTools({
    toolsFile: config.toolsFile,
    dev,
    fileProviders,
    builtIn: tools,
    modules,
  });
  const extraTools = [...modules, ...declared];
  const lock = await acquireRunLock(config.dataDir);
  closers.push({ name: 'run lock', close: lock.release });

  const tls = dev ? await loadOrCreateLocalTls(join(config.dataDir, 'tls')) : await readTls(config);
  // The development CA and TLS_CA_FILE, in development too (a provider on a private CA).
  const extraCaPems = await readTrustedCas({
    devCaFile: dev ? join(config.dataDir, 'tls', 'ca.pem') : undefined,
    caFile: config.tls.caFile,
  });
  // Every outgoing connection is judged by its address: none reaches an internal one EGRESS_ALLOW does not name.
  const egress = createEgressGuard({ allow: config.egress.allow });
  logger.info({ egressAllow: config.egress.allow.entries }, 'egress: internal addresses refused except these');
  const fetch = createFetch({ extraCaPems, timeoutMs: config.broker.providerTimeoutMs, egress });
  // Its own deadline: an upstream MCP server's tool may take longer (or shorter) than a provider's API.
  // On undici's request, not fetch: one upstream request per proxied tool call (shared/requestFetch.ts).
  const upstreamFetch = createRequestFetch({ extraCaPems, timeoutMs: config.broker.upstreamTimeoutMs, egress });
  const render = createRender({ cache: !dev });

  let databaseUrl = config.db.url;
  let database = 'external Postgres (DATABASE_URL)';
  if (!databaseUrl) {
    const embedded = await startEmbeddedPostgres(
      join(config.dataDir, 'postgres'),
      logger.child({ component: 'postgres' }),
      {
        avoidPorts: ownPorts(config, dev),
      },
    );
    closers.push({ name: 'embedded Postgres', close: embedded.stop });
    databaseUrl = embedded.url;
    // As root, in a folder its own user cannot enter, the cluster lives elsewhere (embeddedPostgres.ts).
    database = `embedded Postgres, data in ${embedded.dir}`;
  }
  // Through a transaction-mode pooler (DATABASE_DIRECT_URL set), what needs one session, the
  // migrations' advisory lock and the completion signal's LISTEN, goes straight to Postgres.
  const directUrl = config.db.directUrl;
  const pool = createPool({ url: databaseUrl, poolMax: config.db.poolMax, pooled: directUrl !== undefined }, logger);
  closers.push({ name: 'database pool', close: () => pool.end() });
  const direct = directUrl ? createPool({ url: directUrl, poolMax: 2 }, logger) : undefined;
  if (direct) closers.push({ name: 'direct database pool', close: () => direct.end() });
  const applied = await migrate(direct ?? pool, undefined, (newer) =>
    logger.warn({ newer }, 'the database has migrations of a newer release (a rolling deploy); this one keeps serving'),
  );
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');

  let issuer = config.oidc.issuer;
  let clientSecret = config.oidc.clientSecret;
  let secretKeys = config.secretKeys;
  let devFacts: BannerFacts['dev'];
  let devPorts:
    Record<'DEV_IDP_PORT' | 'DEV_REPORTS_PORT' | 'DEV_GITHUB_PORT' | 'DEV_UPSTREAM_PORT', string> | undefined;
  const devTools: Tool<McpToolDeps>[] = [];
  if (dev) {
    if (config.dev.allowNetwork) {
      logger.warn(
        { host: config.http.host },
        'DEV_ALLOW_NETWORK=true: the development identity provider (known passwords, an operator user) listens beyond loopback; publish its ports to loopback only',
      );
    }
    // Development servers (oidc-provider and friends) are loaded only in development.
    const { loadOrCreateDevSecrets } = await import('./dev/devSecrets.js');
    const { withoutRuntimeWarning } = await import('./dev/oidcProviderRuntime.js');
    const { devUpstreamProvider, githubDevProvider, reportServiceProvider, startDevStack } =
      await withoutRuntimeWarning(() => import('./dev/devStack.js'));
    const secrets = await loadOrCreateDevSecrets(config.dataDir);
    const stack = await startDevStack({
      host: config.http.host,
      idpPort: config.dev.idpPort,
      reportsPort: config.dev.reportsPort,
      githubPort: config.dev.githubPort,
      upstreamPort: config.dev.upstreamPort,
      tls,
      fetch,
      secrets,
      brokerPublicUrl: config.http.publicUrl,
      mcpResourceUrl: config.http.mcpResourceUrl,
      dataDir: config.dataDir,
      render,
      logger,
    });
    closers.push({ name: 'development servers', close: () => stack.close(config.http.shutdownGraceMs) });
    issuer ??= stack.idp.issuer;
    clientSecret ??= new Secret(secrets.brokerIdpClientSecret);
    secretKeys ??= secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) }));
    // An operator's own `github` entry (a real GitHub OAuth App) takes the place of the development one.
    const ownGithub = providerEntries.some((entry) => (entry as { id?: unknown } | null)?.id === 'github');
    providerEntries.unshift(
      reportServiceProvider(stack, secrets),
      ...(stack.github && !ownGithub ? [githubDevProvider(stack.github)] : []),
      // A remote MCP server behind the broker, so a proxied tool works end to end from the first start.
      ...(stack.upstream ? [devUpstreamProvider(stack.upstream)] : []),
    );
    const { DEV_PASSWORD, devUsers } = await import('./dev/devUsers.js');
    devPorts = {
      DEV_IDP_PORT: portOf(stack.idp.issuer),
      DEV_REPORTS_PORT: portOf(stack.reports.issuer),
      DEV_GITHUB_PORT: stack.github ? portOf(stack.github.origin) : String(config.dev.githubPort),
      DEV_UPSTREAM_PORT: stack.upstream ? portOf(stack.upstream.url) : String(config.dev.upstreamPort),
    };
    devFacts = {
      reportsIssuer: stack.reports.issuer,
      reportsApiUrl: stack.reports.apiUrl,
      githubOrigin: ownGithub ? undefined : stack.github?.origin,
      upstreamUrl: stack.upstream?.url,
      caFile: resolve(config.dataDir, 'tls', 'ca.pem'),
      networkHost: config.dev.allowNetwork ? config.http.host : undefined,
      users: devUsers.map((u) => (u.roles.length > 0 ? `${u.login} (${u.roles.join(', ')})` : u.login)),
      password: DEV_PASSWORD,
    };
    if (config.dev.secretFormTool) {
      devTools.push((await import('./dev/devSecretFormTool.js')).devSecretFormTool);
      logger.warn(
        'DEV_SECRET_FORM_TOOL=true: serving dev_secret_form, whose form asks for a password (the audit must refuse it)',
      );
    }
  }
  if (!issuer || !clientSecret) throw new ConfigError(['OIDC_ISSUER and OIDC_CLIENT_SECRET are required']);

  if (!secretKeys) throw new ConfigError(['SECRET_KEYS is required']);
  // Before anything is sealed: which key seals while a rotation rolls across instances.
  const keyRegistry = createKeyRegistry({ db: pool, own: secretKeys.map((k) => k.kid), liveMs: KEY_LIVE_MS, logger });
  await keyRegistry.refresh();
  const keyAnnouncer = startPeriodic(() => keyRegistry.refresh(), KEY_ANNOUNCE_MS, logger, 'key announcement');
  closers.push({ name: 'key registry', close: () => keyAnnouncer.stop().then(() => keyRegistry.leave()) });
  if (dev) await (await import('./dev/devSeed.js')).seedDevelopmentData(pool, issuer);

  const providers = providersFile.parse(providerEntries, { publicUrl: config.http.publicUrl, issuer });
  const metrics = createMetrics({ pool, logger });
  const broker = createBrokerServer({
    // The declared tools may mark themselves high-risk beside HIGH_RISK_TOOLS.
    settings: { ...config, highRiskTools: highRiskToolNames(config.highRiskTools, declared) },
    pool,
    ...(direct ? { listenPool: direct } : {}),
    logger,
    clock: systemClock,
    render,
    oidc: createOidcClient({ issuer, clientId: config.oidc.clientId, clientSecret, fetch, allowLoopback: dev }),
    migrations: await readMigrations(),
    issuer,
    fetch,
    upstreamFetch,
    secretKeys,
    keyAgreement: keyRegistry,
    version: packageVersion(),
    providers,
    allowLoopback: dev,
    extraTools: [...extraTools, ...devTools],
    metrics,
  });
  closers.push({ name: 'completion listener', close: broker.close });
  // A pending outcome older than a minute had its call cut short (crash, lost answer): re-driven by the sweep.
  const reconcile = (batch: number) => broker.reconcile(RECONCILE_GRACE_MS, batch);
  const sweeper = startSweeper(
    {
      pool,
      clock: systemClock,
      logger,
      reconcile,
      // After a key rotation, values at rest move from the older keys to the first of SECRET_KEYS.
      reseal: (inBudget) => broker.reseal(inBudget),
      onSweep: (r) => metrics.sweepSucceeded(r),
      onSweepFailed: () => metrics.sweepFailed(),
    },
    config.broker.sweepIntervalMs,
  );
  closers.push({ name: 'sweeper', close: sweeper.stop });
  // Access tokens about to expire are renewed ahead of the calls that need them.
  const refresher = startPeriodic(
    () => broker.refreshExpiring(PROACTIVE_REFRESH),
    PROACTIVE_REFRESH.intervalMs,
    logger,
    'proactive refresh',
  );
  closers.push({ name: 'proactive refresh', close: refresher.stop });
  // The outbox's events go out from every instance, each event claimed by one at a time.
  if (config.webhook) {
    const delivery = startWebhookDelivery({ pool, fetch, clock: systemClock, logger, webhook: config.webhook });
    closers.push({ name: 'webhook delivery', close: delivery.stop });
  }
  // TLS_TERMINATED_BY_PROXY=true (production only): the proxy in front holds the certificate.
  const server = config.tls.terminatedByProxy
    ? await listenHttp(broker.listener, config.http.host, config.http.port, 'broker')
    : await listenHttps(tls, broker.listener, config.http.host, config.http.port, 'broker');
  closers.push({
    name: 'broker server',
    close: () => {
      // Calls waiting in legacy sessions answer now, within the grace period, rather than be cut off.
      broker.endSessions();
      return server.close(config.http.shutdownGraceMs);
    },
  });

  logger.info(
    {
      port: server.port,
      mode: config.mode,
      tls: config.tls.terminatedByProxy ? 'terminated by proxy' : 'own',
      trustProxy: config.http.trustProxy.shown,
    },
    'broker listening',
  );
  if (devPorts) {
    // The CLI run beside it (npm run broker -- …) finds these, whatever PORT this was started with.
    const forget = await recordService(config.dataDir, {
      PORT: String(server.port),
      PUBLIC_URL: config.http.publicUrl.href,
      ...devPorts,
    });
    closers.push({ name: 'service record', close: forget });
  }
  if (config.mcp.allowAnonymous) {
    logger.warn(
      'MCP_ALLOW_ANONYMOUS=true: MCP requests without a bearer token are served as an anonymous principal (development, loopback only)',
    );
  }
  process.stdout.write(
    banner({
      publicUrl: config.http.publicUrl,
      mcpResourceUrl: config.http.mcpResourceUrl,
      anonymousMcp: config.mcp.allowAnonymous,
      issuer,
      database,
      ...(devFacts ? { dev: devFacts } : {}),
    }),
  );
}

const portOf = (url: string): string => new URL(url).port;

/** The loopback ports this process listens on once its database is up (0: the system picks later). */
function ownPorts(config: Readonly<Config>, dev: boolean): number[] {
  const { idpPort, reportsPort, githubPort, upstreamPort } = config.dev;
  return [config.http.port, ...(dev ? [idpPort, reportsPort, githubPort, upstreamPort] : [])].filter((p) => p > 0);
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

async function readTls(config: Readonly<Config>): Promise<TlsMaterial> {
  const { certFile, keyFile, terminatedByProxy } = config.tls;
  // TLS_CA_FILE is read with the CAs outbound calls trust (tls/trustedCas.ts), not here.
  if (terminatedByProxy) return { certPem: '', keyPem: '', caPem: '' };
  if (!certFile || !keyFile) throw new ConfigError(['TLS_CERT_FILE and TLS_KEY_FILE are required']);
  const [certPem, keyPem] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  return { certPem, keyPem, caPem: '' };
}

/** Closes in reverse order of opening: servers first (in-flight requests finish), the database last. */
async function shutdown(closers: Closer[], logger: Logger): Promise<void> {
  for (const closer of closers.reverse()) {
    try {
      await closer.close();
    } catch (err) {
      logger.error({ err }, `failed to stop ${closer.name}`);
    }
  }
}

function run(): void {
  let config: Readonly<Config>;
  try {
    config = loadConfig();
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(78); // EX_CONFIG
  }
  const logger = createLogger(config.log);
  armFaultPoint(config.faultPoint);
  if (config.faultPoint)
    logger.warn({ faultPoint: config.faultPoint }, 'BROKER_FAULT_POINT is set: this process kills itself there');
  const closers: Closer[] = [];
  let startup: Promise<void> = Promise.resolve();
  let stopping: Promise<void> | undefined;
  const onStopSignal = stopSignalHandler({
    stop(signal) {
      logger.info({ signal }, 'stopping: finishing in-flight requests');
      // A signal during start-up waits for it to settle, so everything it opened is closed.
      stopping = startup
        .catch(() => undefined)
        .then(() => shutdown(closers, logger))
        .then(() => {
          logger.info('stopped');
          process.exit(0);
        });
    },
    force(signal) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    },
    repeated(signal) {
      logger.debug(
        { signal },
        'the same stop signal again (from the terminal and a wrapper forwarding it): already stopping',
      );
    },
  });
  process.on('SIGINT', onStopSignal);
  process.on('SIGTERM', onStopSignal);

  startup = main(config, logger, closers);
  startup.catch(async (err: unknown) => {
    if (stopping) return;
    const expected =
      err instanceof AlreadyRunningError ||
      err instanceof ConfigError ||
      err instanceof ProviderConfigError ||
      err instanceof ToolModuleError ||
      err instanceof ToolsFileError;
    if (expected) process.stderr.write(`broker: ${(err as Error).message}\n`);
    else logger.fatal({ err }, 'start-up failed');
    await shutdown(closers, logger);
    process.exit(expected ? 78 : 1);
  });
}

run();
