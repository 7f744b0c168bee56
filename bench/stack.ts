import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RequestListener } from 'node:http';
import { readMigrations } from '../src/db/migrate.js';
import { seedDevelopmentData } from '../src/dev/devSeed.js';
import { loadOrCreateDevSecrets } from '../src/dev/devSecrets.js';
import { githubDevProvider, reportServiceProvider, startLocalDevStack } from '../src/dev/devStack.js';
import { resourceMetadataUrl } from '../src/mcp/protectedResourceRoutes.js';
import { createOidcClient } from '../src/oauth/oauthClient.js';
import { parseProviders } from '../src/providers/providerConfig.js';
import { listenHttps, type RunningServer } from '../src/runtime/httpsServer.js';
import { createBrokerServer, type ServerDeps } from '../src/server.js';
import { systemClock } from '../src/shared/clock.js';
import { createFetch, type Fetch } from '../src/shared/httpClient.js';
import type { Logger } from '../src/shared/logger.js';
import { Secret } from '../src/shared/secret.js';
import { loadOrCreateLocalTls } from '../src/tls/localCa.js';
import { createRender } from '../src/web/render.js';
import { atUrl, defaultSettings } from '../test/support/testSettings.js';
import { openBenchDb } from './benchDb.js';
import { createPeerListener } from './peerServer.js';

type ExtraTools = NonNullable<ServerDeps['extraTools']>;

export interface BenchStack {
  brokerUrl: string;
  /** POST targets: the broker's and the peer's MCP endpoints. */
  brokerMcpUrl: string;
  peerMcpUrl: string;
  issuer: string;
  caPem: string;
  /** A fetch that trusts the stack's CA (TLS verified). */
  fetch: Fetch;
  /**
   * Puts a broker that also has the GitHub-like development provider, and
   * serves `tools` beside the built-in ones, in place of the first (which has
   * only the Report Service, as the peer's tool set mirrors), at the same URL.
   */
  serveGithubTools(tools: ExtraTools): Promise<void>;
  close(): Promise<void>;
}

type Closer = () => Promise<unknown>;

/**
 * The broker as main.ts assembles it (the wiring of test/support/brokerStack.ts,
 * which needs vitest), the development identity provider and GitHub-like
 * provider, a migrated and seeded schema, and the SDK peer on the same TLS
 * certificate, database and issuer.
 */
export async function startBenchStack(options: {
  databaseUrl: Secret | undefined;
  logger: Logger;
}): Promise<BenchStack> {
  const { logger } = options;
  const closers: Closer[] = [];
  let closing: Promise<void> | undefined;
  // Idempotent: the end of the run and a Ctrl-C may both ask.
  const close = () =>
    (closing ??= (async () => {
      for (const closer of closers.reverse())
        await closer().catch((err: unknown) => logger.warn({ err }, 'bench cleanup step failed'));
    })());
  try {
    const dir = await mkdtemp(join(tmpdir(), 'mcp-bench-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    // We may run as root while Postgres runs as `postgres`, which must traverse this folder.
    await chmod(dir, 0o711);
    const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
    const secrets = await loadOrCreateDevSecrets(dir);
    const fetch = createFetch({ extraCaPems: [tls.caPem] });
    const render = createRender({ cache: true });
    const db = await openBenchDb(options.databaseUrl, dir, logger);
    closers.push(() => db.close());

    let brokerHandler: RequestListener = (_req, res) => res.writeHead(503).end();
    const broker = await listen(
      closers,
      listenHttps(tls, (req, res) => brokerHandler(req, res), '127.0.0.1', 0, 'broker'),
    );
    const brokerUrl = `https://127.0.0.1:${broker.port}`;
    const mcpResourceUrl = `${brokerUrl}/mcp`;
    const dev = await startLocalDevStack({ tls, fetch, secrets, render, logger, brokerUrl, github: true });
    closers.push(() => dev.close(0));
    const brokerPool = db.newPool();
    await seedDevelopmentData(brokerPool, dev.idp.issuer);
    const migrations = await readMigrations();
    // The configuration's defaults (src/config/config.ts), as a deployment gets them.
    const settings = atUrl(defaultSettings(), new URL(brokerUrl), mcpResourceUrl);
    const brokerFor = (providers: Record<string, unknown>[], extraTools: ExtraTools = []) =>
      createBrokerServer({
        settings,
        pool: brokerPool,
        logger,
        clock: systemClock,
        render,
        oidc: createOidcClient({
          issuer: dev.idp.issuer,
          clientId: dev.idp.brokerClientId,
          clientSecret: new Secret(secrets.brokerIdpClientSecret),
          fetch,
          allowLoopback: true,
        }),
        migrations,
        issuer: dev.idp.issuer,
        fetch,
        secretKeys: secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
        version: 'bench',
        providers: parseProviders(providers, { allowLoopback: true }),
        allowLoopback: true,
        extraTools,
      });
    // One broker at a time behind the one listener: the next keeps its URL, so the same tokens'
    // audience and the same callback URL registered at the GitHub-like provider.
    let brokerServer = brokerFor([reportServiceProvider(dev, secrets)]);
    closers.push(() => brokerServer.close());
    brokerHandler = brokerServer.listener;
    const serveGithubTools = async (tools: ExtraTools) => {
      const previous = brokerServer;
      brokerServer = brokerFor([reportServiceProvider(dev, secrets), githubDevProvider(dev.github!)], tools);
      brokerHandler = brokerServer.listener;
      await previous.close();
    };

    const peer = createPeerListener({
      pool: db.newPool(),
      issuer: dev.idp.issuer,
      audience: mcpResourceUrl,
      resourceMetadataUrl: resourceMetadataUrl(mcpResourceUrl),
      fetch,
      logger,
    });
    closers.push(peer.close);
    const peerServer = await listen(closers, listenHttps(tls, peer.listener, '127.0.0.1', 0, 'sdk peer'));

    return {
      brokerUrl,
      brokerMcpUrl: mcpResourceUrl,
      peerMcpUrl: `https://127.0.0.1:${peerServer.port}/mcp`,
      issuer: dev.idp.issuer,
      caPem: tls.caPem,
      fetch,
      serveGithubTools,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

async function listen(closers: Closer[], starting: Promise<RunningServer>): Promise<RunningServer> {
  const server = await starting;
  closers.push(() => server.close(0));
  return server;
}
