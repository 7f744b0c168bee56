import type { RequestListener } from 'node:http';
import { createKeyring } from '../src/crypto/keyring.js';
import { createSecretBox } from '../src/crypto/secretBox.js';
import { readMigrations } from '../src/db/migrate.js';
import { startLocalDevStack } from '../src/dev/devStack.js';
import { listenHttps } from '../src/runtime/httpsServer.js';
import type { TokenVaultDeps } from '../src/secrets/sealedTokens.js';
import type { BrokerServer } from '../src/server.js';
import { systemClock } from '../src/shared/clock.js';
import { createFetch, type Fetch } from '../src/shared/httpClient.js';
import type { Logger } from '../src/shared/logger.js';
import { Secret } from '../src/shared/secret.js';
import { atUrl, defaultSettings } from '../test/support/testSettings.js';
import { createBenchBroker } from './benchBroker.js';
import { openBenchResources } from './benchResources.js';
import { startRefreshProvider, type RefreshProvider } from './refreshProvider.js';
import { whoamiTool } from './refreshTool.js';

export const PROVIDER_ID = 'refreshbench';
export const PROVIDER_SCOPES = ['whoami'] as const;

export interface RefreshInstance {
  /** e.g. https://127.0.0.1:40123 (POST `${url}/mcp`). */
  url: string;
  server: BrokerServer;
}

export interface RefreshStack {
  /** Two broker instances on one database, with the same keys and MCP audience, each with its own pool and port. */
  instances: readonly [RefreshInstance, RefreshInstance];
  /** The development identity provider (the subjects' issuer) and the audience of its MCP tokens. */
  issuer: string;
  mcpResourceUrl: string;
  /** Trusts the bench's CA, for the callers. */
  fetch: Fetch;
  provider: RefreshProvider;
  /** The vault's box and clock over the bench's own pool, to seed and read connections as the brokers do. */
  vault: TokenVaultDeps;
  close(): Promise<void>;
}

/**
 * Postgres (embedded, or DATABASE_URL) with the real migrations in a schema of its own, the
 * development identity provider, the bench's OAuth 2.0 provider (bench/refreshProvider.ts) as a
 * custom `kind: oauth2` entry, and two brokers in this process serving the bench's tool
 * (bench/refreshTool.ts) with the configuration's defaults.
 */
export async function startRefreshStack(options: {
  databaseUrl: Secret | undefined;
  logger: Logger;
  refreshDelayMs: { min: number; max: number };
}): Promise<RefreshStack> {
  const { logger } = options;
  const { tls, secrets, fetch, render, db, defer, close } = await openBenchResources({
    databaseUrl: options.databaseUrl,
    logger,
    prefix: 'refresh-bench-',
  });
  try {
    const listeners = await Promise.all(
      ['broker 1', 'broker 2'].map(async (name) => {
        let handler: RequestListener = (_req, res) => res.writeHead(503).end();
        const server = await listenHttps(tls, (req, res) => handler(req, res), '127.0.0.1', 0, name);
        defer(() => server.close(0));
        return { url: `https://127.0.0.1:${server.port}`, serve: (next: RequestListener) => void (handler = next) };
      }),
    );
    const mcpResourceUrl = `${listeners[0]!.url}/mcp`;
    const dev = await startLocalDevStack({ tls, fetch, secrets, render, logger, brokerUrl: listeners[0]!.url });
    defer(() => dev.close(0));
    const provider = await startRefreshProvider({ tls, delayMs: options.refreshDelayMs });
    defer(() => provider.close());

    const base = { logger, render, fetch, dev, secrets, migrations: await readMigrations() };
    const providers = [provider.entry(PROVIDER_ID, PROVIDER_SCOPES)];
    const extraTools = [whoamiTool(PROVIDER_ID, PROVIDER_SCOPES)];
    const instances = listeners.map(({ url, serve }) => {
      // The configuration's defaults (src/config/config.ts), as a deployment gets them; one MCP audience for both.
      const settings = atUrl(defaultSettings(), new URL(url), mcpResourceUrl);
      const server = createBenchBroker(base, { settings, pool: db.newPool(), providers, extraTools });
      defer(() => server.close());
      serve(server.listener);
      return { url, server };
    });

    const keys = secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) }));
    return {
      instances: [instances[0]!, instances[1]!],
      issuer: dev.idp.issuer,
      mcpResourceUrl,
      fetch: createFetch({ extraCaPems: [tls.caPem], timeoutMs: 30_000 }),
      provider,
      // The vault's box as src/broker/buildBrokerDeps.ts builds it: the same keys, the same purpose.
      vault: {
        pool: db.newPool(),
        box: createSecretBox(createKeyring(keys, 'secrets')),
        clock: systemClock,
        providers: new Map(),
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
