import type { MigrationFile } from '../src/db/migrate.js';
import type { Pool } from '../src/db/pool.js';
import type { DevSecrets } from '../src/dev/devSecrets.js';
import type { DevStack } from '../src/dev/devStack.js';
import { createOidcClient } from '../src/oauth/oauthClient.js';
import { parseProviders } from '../src/providers/providerConfig.js';
import { createBrokerServer, type BrokerServer, type ServerDeps } from '../src/server.js';
import { systemClock } from '../src/shared/clock.js';
import type { Fetch } from '../src/shared/httpClient.js';
import type { Logger } from '../src/shared/logger.js';
import { Secret } from '../src/shared/secret.js';
import type { Render } from '../src/web/render.js';
import type { BrokerModules } from './brokerModules.js';

export type ExtraTools = NonNullable<ServerDeps['extraTools']>;

/** What every broker instance of a bench stack shares: the process's resources and the development servers. */
export interface BenchBrokerBase {
  logger: Logger;
  render: Render;
  /** Trusts the bench's CA; the broker calls the identity provider and the providers with it. */
  fetch: Fetch;
  /** The upstream MCP servers' fetch, as main.ts builds it (createRequestFetch), on the same CA. */
  upstreamFetch?: Fetch;
  dev: DevStack;
  secrets: DevSecrets;
  migrations: MigrationFile[];
}

type Assembly = Pick<
  BrokerModules,
  'createBrokerServer' | 'createOidcClient' | 'parseProviders' | 'Secret' | 'systemClock'
>;
const SOURCE: Assembly = { createBrokerServer, createOidcClient, parseProviders, Secret, systemClock };

/**
 * One broker instance as main.ts assembles it (the wiring of test/support/brokerStack.ts, which
 * needs vitest), signing users in at the development identity provider and accepting its MCP tokens.
 * `form` is the code it is assembled from (bench/brokerModules.ts), src/ by default; `base` and
 * `instance` then hold values made by that form too.
 */
export function createBenchBroker(
  base: BenchBrokerBase,
  instance: {
    settings: ServerDeps['settings'];
    pool: Pool;
    /** PROVIDERS_FILE entries, validated by parseProviders as a deployment's are. */
    providers: readonly Record<string, unknown>[];
    extraTools?: ExtraTools;
  },
  form: Assembly = SOURCE,
): BrokerServer {
  const { dev, secrets, fetch } = base;
  const { createOidcClient, parseProviders, Secret, systemClock } = form;
  return form.createBrokerServer({
    settings: instance.settings,
    pool: instance.pool,
    logger: base.logger,
    clock: systemClock,
    render: base.render,
    oidc: createOidcClient({
      issuer: dev.idp.issuer,
      clientId: dev.idp.brokerClientId,
      clientSecret: new Secret(secrets.brokerIdpClientSecret),
      fetch,
      allowLoopback: true,
    }),
    migrations: base.migrations,
    issuer: dev.idp.issuer,
    fetch,
    ...(base.upstreamFetch && { upstreamFetch: base.upstreamFetch }),
    secretKeys: secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
    version: 'bench',
    providers: parseProviders(instance.providers, {
      allowLoopback: true,
      self: { publicUrl: instance.settings.http.publicUrl, issuer: dev.idp.issuer },
    }),
    allowLoopback: true,
    extraTools: instance.extraTools ?? [],
  });
}
