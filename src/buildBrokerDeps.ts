import type { Config } from './config/config.js';
import { createKeyring, type KeyRotationView } from './crypto/keyring.js';
import { createSecretBox } from './crypto/secretBox.js';
import type { Pool } from './db/pool.js';
import { createProviderClient, type ProviderClient } from './oauth/providerClient.js';
import type { Provider } from './providers/providerConfig.js';
import type { Clock } from './shared/clock.js';
import type { Fetch } from './shared/httpClient.js';
import type { Logger } from './shared/logger.js';
import type { Secret } from './shared/secret.js';
import { holdDiscoveredServer } from './upstream/issuerPin.js';
import { createUpstreamClient } from './upstream/upstreamClient.js';
import type { BrokerDeps } from './broker/brokerDeps.js';
import { createCompletionSignal } from './broker/completionSignal.js';
import { createWaitGate } from './broker/quotas.js';

/** What the broker's use cases are built from: the process's resources and the deployment's settings. */
export interface BrokerBuild {
  pool: Pool;
  /**
   * Where the completion signal LISTENs: a pool straight to Postgres when `pool` goes through a
   * transaction-mode pooler, which would hand the listening session to other clients. Default `pool`.
   */
  listenPool?: Pool;
  clock: Clock;
  logger: Logger;
  /** For the providers (verifies TLS). */
  fetch: Fetch;
  /** SECRET_KEYS: the vault's and the connect links' keys. */
  secretKeys: readonly { kid: string; key: Secret }[];
  /** Which of them seals, while a rotation rolls across instances (default: the first). */
  keyAgreement?: KeyRotationView;
  providers: readonly Provider[];
  /** Development: loopback URLs pass the URL policy. */
  allowLoopback: boolean;
  /** The broker's own OIDC issuer (undefined where the caller does not know it): no upstream may use it. */
  issuer: string | undefined;
  /** The configuration's slices as loadConfig parsed them; `http.publicUrl` is this instance's. */
  settings: Pick<Config, 'http' | 'broker' | 'quotas' | 'highRiskTools'>;
}

/**
 * The broker's dependencies, built in one place for every process that runs
 * its use cases: the server, and the operator CLI (which re-issues links and
 * so seals their handles with the same keys). The caller closes `signal`.
 */
export function buildBrokerDeps(build: BrokerBuild): BrokerDeps {
  const { http, quotas, highRiskTools } = build.settings;
  const {
    providersFile: _file,
    providerSecret: _secret,
    sweepIntervalMs: _sweep,
    upstreamTimeoutMs: _upstream,
    providerTimeoutMs: _provider,
    ...settings
  } = build.settings.broker;
  const box = createSecretBox(createKeyring(build.secretKeys, 'secrets', build.keyAgreement));
  const clientDeps = { fetch: build.fetch, allowLoopback: build.allowLoopback, now: () => build.clock.now() };
  return {
    ...settings,
    pool: build.pool,
    clock: build.clock,
    logger: build.logger,
    providers: new Map<string, ProviderClient>(
      build.providers.map((p) => [
        p.id,
        // An upstream MCP server's client learns its endpoints and its client on first use.
        p.upstream
          ? createUpstreamClient(
              { ...p, upstream: p.upstream },
              { ...clientDeps, pool: build.pool, box, publicUrl: http.publicUrl, issuer: build.issuer },
            )
          : createProviderClient(p, {
              ...clientDeps,
              // Discovered endpoints are pinned on first use, as an upstream's authorization server is.
              holdDiscovered: (found) => holdDiscoveredServer({ pool: build.pool, now: clientDeps.now }, p.id, found),
            }),
      ]),
    ),
    box,
    signal: createCompletionSignal(build.listenPool ?? build.pool, build.logger),
    publicUrl: http.publicUrl,
    allowLoopback: build.allowLoopback,
    highRiskTools: new Set(highRiskTools),
    quotas,
    waits: createWaitGate(quotas.waitsPerPrincipal),
  };
}
