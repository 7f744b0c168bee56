import type { RequestListener } from 'node:http';
import { seedDevelopmentData } from '../src/dev/devSeed.js';
import { createKeyring } from '../src/crypto/keyring.js';
import { createSecretBox } from '../src/crypto/secretBox.js';
import {
  devUpstreamProvider,
  githubDevProvider,
  reportServiceProvider,
  startLocalDevStack,
} from '../src/dev/devStack.js';
import type { Principal } from '../src/auth/principal.js';
import { DEV_UPSTREAM_ID } from '../src/dev/devUpstream.js';
import { resourceMetadataUrl } from '../src/mcp/protectedResourceRoutes.js';
import { listenHttps, type RunningServer } from '../src/runtime/httpsServer.js';
import type { BrokerServer } from '../src/server.js';
import type { Fetch } from '../src/shared/httpClient.js';
import type { Logger } from '../src/shared/logger.js';
import { accessTokenFor } from '../src/secrets/tokenVault.js';
import { systemClock } from '../src/shared/clock.js';
import { Secret } from '../src/shared/secret.js';
import { atUrl, defaultSettings } from '../test/support/testSettings.js';
import { createBenchBroker, type BenchBrokerBase, type ExtraTools } from './benchBroker.js';
import { BROKER_FORMS, type BrokerForm, type BrokerModules } from './brokerModules.js';
import { openBenchResources, type BenchResources } from './benchResources.js';
import { createPeerListener } from './peerServer.js';
import { startUpstreamProcess } from './upstreamProcess.js';

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
   * Which code form's broker answers at brokerUrl from now on (bench/brokerModules.ts); tsx at
   * the start. Both are built for each configuration below, on the same settings, database,
   * development servers and listener (so the same tokens' audience and callback URLs).
   */
  use(form: BrokerForm): void;
  /**
   * Puts a broker that also has the GitHub-like development provider, and
   * serves the tools `toolsFor` makes in its form beside the built-in ones, in place of the first
   * (which has only the Report Service, as the peer's tool set mirrors), at the same URL.
   */
  serveGithubTools(toolsFor: (form: BrokerModules) => Promise<ExtraTools>): Promise<void>;
  /** The development upstream MCP server's endpoint (memo, src/dev/devUpstream.ts), in its own process. */
  upstreamMcpUrl: string;
  /** memo's process's CPU time so far. */
  upstreamCpuUsage(): Promise<NodeJS.CpuUsage>;
  /** Puts a broker with the Report Service and memo as an upstream in place of the one serving, at the same URL. */
  serveUpstream(): Promise<void>;
  /** The user's upstream access token at memo, from the vault as the broker reads it (for the direct calls). */
  upstreamToken(user: Principal): Promise<string | undefined>;
  close(): Promise<void>;
}

/**
 * The broker as main.ts assembles it (the wiring of test/support/brokerStack.ts,
 * which needs vitest), once from each code form of `forms`, the development identity
 * provider and GitHub-like provider, a migrated and seeded schema, and the SDK peer
 * on the same TLS certificate, database and issuer. The listener is node:https with
 * the broker's options (src/runtime/httpsServer.ts), shared by both forms.
 */
export async function startBenchStack(options: {
  databaseUrl: Secret | undefined;
  logger: Logger;
  forms: Record<BrokerForm, BrokerModules>;
}): Promise<BenchStack> {
  const { logger, forms } = options;
  const { tls, secrets, fetch, render, db, defer, close } = await openBenchResources({
    databaseUrl: options.databaseUrl,
    logger,
    prefix: 'mcp-bench-',
  });
  try {
    let brokerHandler: RequestListener = (_req, res) => res.writeHead(503).end();
    const broker = await listen(
      defer,
      listenHttps(tls, (req, res) => brokerHandler(req, res), '127.0.0.1', 0, 'broker'),
    );
    const brokerUrl = `https://127.0.0.1:${broker.port}`;
    const mcpResourceUrl = `${brokerUrl}/mcp`;
    const dev = await startLocalDevStack({
      tls,
      fetch,
      secrets,
      render,
      logger,
      brokerUrl,
      github: true,
    });
    defer(() => dev.close(0));
    const memo = await startUpstreamProcess(tls, brokerUrl);
    defer(memo.close);
    await seedDevelopmentData(db.newPool(), dev.idp.issuer);
    // Each form's broker on its own pool, fetches, views and settings, all made by that form's code;
    // the configuration's defaults (src/config/config.ts), as a deployment gets them.
    const setupOf = async (form: BrokerModules) => ({
      form,
      pool: db.newPool(form),
      settings: atUrl(defaultSettings(form.loadConfig), new URL(brokerUrl), mcpResourceUrl),
      base: {
        logger,
        render: form.createRender({ cache: true }),
        fetch: form.createFetch({ extraCaPems: [tls.caPem] }),
        upstreamFetch: form.createRequestFetch({ extraCaPems: [tls.caPem] }),
        dev,
        secrets,
        migrations: await form.readMigrations(),
      } satisfies BenchBrokerBase,
    });
    const setups = { tsx: await setupOf(forms.tsx), compiled: await setupOf(forms.compiled) };
    type Pair = Record<BrokerForm, BrokerServer>;
    const brokersFor = async (
      providers: Record<string, unknown>[],
      toolsFor: (form: BrokerModules) => Promise<ExtraTools> = () => Promise.resolve([]),
    ): Promise<Pair> => {
      const one = async ({ form, pool, settings, base }: (typeof setups)[BrokerForm]) =>
        createBenchBroker(base, { settings, pool, providers, extraTools: await toolsFor(form) }, form);
      return { tsx: await one(setups.tsx), compiled: await one(setups.compiled) };
    };
    // One configuration at a time behind the one listener, and one form of it answering: the next
    // keeps its URL, so the same tokens' audience and the same callback URL registered at the
    // GitHub-like provider.
    let serving: BrokerForm = 'tsx';
    let brokers = await brokersFor([reportServiceProvider(dev, secrets)]);
    defer(() => Promise.all(BROKER_FORMS.map((f) => brokers[f].close())));
    brokerHandler = brokers.tsx.listener;
    const use = (form: BrokerForm) => {
      serving = form;
      brokerHandler = brokers[form].listener;
    };
    const serveInstead = async (
      providers: Record<string, unknown>[],
      toolsFor?: (form: BrokerModules) => Promise<ExtraTools>,
    ) => {
      const previous = brokers;
      brokers = await brokersFor(providers, toolsFor);
      use(serving);
      await Promise.all(BROKER_FORMS.map((f) => previous[f].close()));
    };
    const serveGithubTools = (toolsFor: (form: BrokerModules) => Promise<ExtraTools>) =>
      serveInstead([reportServiceProvider(dev, secrets), githubDevProvider(dev.github!)], toolsFor);
    const serveUpstream = () => serveInstead([reportServiceProvider(dev, secrets), devUpstreamProvider(memo)]);
    // The vault's box as src/broker/buildBrokerDeps.ts builds it: the same keys, the same purpose.
    const keys = secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) }));
    const vault = {
      pool: db.newPool(),
      box: createSecretBox(createKeyring(keys, 'secrets')),
      clock: systemClock,
      providers: new Map(),
    };

    const peer = createPeerListener({
      pool: db.newPool(),
      issuer: dev.idp.issuer,
      audience: mcpResourceUrl,
      resourceMetadataUrl: resourceMetadataUrl(mcpResourceUrl),
      fetch,
      logger,
    });
    defer(peer.close);
    const peerServer = await listen(defer, listenHttps(tls, peer.listener, '127.0.0.1', 0, 'sdk peer'));

    return {
      brokerUrl,
      brokerMcpUrl: mcpResourceUrl,
      peerMcpUrl: `https://127.0.0.1:${peerServer.port}/mcp`,
      issuer: dev.idp.issuer,
      caPem: tls.caPem,
      fetch,
      use,
      serveGithubTools,
      upstreamMcpUrl: memo.url,
      upstreamCpuUsage: memo.cpuUsage,
      serveUpstream,
      upstreamToken: (user) => accessTokenFor(vault, user, DEV_UPSTREAM_ID),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

async function listen(defer: BenchResources['defer'], starting: Promise<RunningServer>): Promise<RunningServer> {
  const server = await starting;
  defer(() => server.close(0));
  return server;
}
