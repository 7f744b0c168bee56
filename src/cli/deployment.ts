import { join } from 'node:path';
import type { Config } from '../config/config.js';
import { runningEmbeddedPostgresUrl } from '../db/embeddedPostgres.js';
import { ProviderConfigError, type Provider } from '../providers/providerConfig.js';
import { configuredProviders } from '../providers/providersFile.js';
import { createEgressGuard } from '../shared/egressGuard.js';
import { createFetch, type Fetch } from '../shared/httpClient.js';
import { Secret } from '../shared/secret.js';
import { CaFileError, readTrustedCas } from '../tls/trustedCas.js';
import type { BrokerSelf } from '../providers/selfReference.js';
import { CliError } from './cliError.js';

/** The CLI cannot find what the running broker uses (exit 2). */
export class DeploymentError extends CliError {}

/**
 * DATABASE_DIRECT_URL or DATABASE_URL, or outside production the embedded Postgres `npm start` is
 * running. The CLI goes past a transaction-mode pooler: its pools set a statement timeout, which
 * PgBouncer refuses as a startup parameter, and an operator's command is no load to pool.
 */
export async function databaseUrl(config: Readonly<Config>): Promise<Secret> {
  if (config.db.directUrl) return config.db.directUrl;
  if (config.db.url) return config.db.url;
  const embedded =
    config.mode === 'production' ? undefined : await runningEmbeddedPostgresUrl(join(config.dataDir, 'postgres'));
  if (!embedded)
    throw new DeploymentError(
      'No database: set DATABASE_URL, or start the development server (npm start) so its embedded Postgres is running.',
    );
  return embedded;
}

/** SECRET_KEYS, or in development the keys npm start generated under DATA_DIR. */
export async function deploymentKeys(config: Readonly<Config>): Promise<{ kid: string; key: Secret }[]> {
  if (config.secretKeys) return config.secretKeys;
  // Development material is loaded only in development.
  const dev =
    config.mode === 'development'
      ? await (await import('../dev/devSecrets.js')).readDevSecrets(config.dataDir)
      : undefined;
  if (!dev)
    throw new DeploymentError(
      `No SECRET_KEYS: set it as the running broker has it${config.mode === 'development' ? `, or start the development server (npm start) so ${config.dataDir}/dev-secrets.json exists` : ''}.`,
    );
  return dev.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) }));
}

/** The running broker's OIDC issuer: OIDC_ISSUER, or outside production the development identity provider's. */
export function deploymentIssuer(config: Readonly<Config>): string {
  return config.oidc.issuer ?? `https://127.0.0.1:${config.dev.idpPort}`;
}

/** The running broker's own origin and identity provider, which no upstream may be. */
export function deploymentSelf(config: Readonly<Config>): BrokerSelf {
  return { publicUrl: config.http.publicUrl, issuer: deploymentIssuer(config) };
}

/**
 * The providers the running broker has, as start-up builds them (src/main.ts): PROVIDERS_FILE, and
 * outside production the development ones npm start adds (an operator's own `github` entry takes
 * the development one's place), with the ports and secrets the running stack uses.
 */
export async function deploymentProviders(config: Readonly<Config>): Promise<Provider[]> {
  try {
    return (await deploymentProviderSources(config)).map((s) => s.provider);
  } catch (err) {
    if (err instanceof ProviderConfigError) throw new DeploymentError(err.message);
    throw err;
  }
}

/** deploymentProviders, each marked whether npm start adds it (`development`); a bad file throws ProviderConfigError. */
export async function deploymentProviderSources(
  config: Readonly<Config>,
): Promise<{ provider: Provider; development: boolean }[]> {
  const dev = config.mode !== 'production';
  const file = configuredProviders(config);
  const entries = await file.entries();
  const own = new Set(entries.map((entry) => (entry as { id?: unknown } | null)?.id));
  const development = (dev ? await developmentEntries(config) : []).filter((entry) => !own.has(entry['id']));
  const ids = new Set(development.map((entry) => entry['id']));
  const providers = file.parse([...development, ...entries], deploymentSelf(config));
  return providers.map((provider) => ({ provider, development: ids.has(provider.id) }));
}

// Development material is loaded only outside production.
async function developmentEntries(config: Readonly<Config>): Promise<Record<string, unknown>[]> {
  const secrets = await (await import('../dev/devSecrets.js')).readDevSecrets(config.dataDir);
  if (!secrets) return [];
  // As main.ts loads it: without oidc-provider's warning about Node.js 20 (dev/oidcProviderRuntime.ts).
  const { withoutRuntimeWarning } = await import('../dev/oidcProviderRuntime.js');
  const { devProviderEntries } = await withoutRuntimeWarning(() => import('../dev/devStack.js'));
  return devProviderEntries(
    {
      publicUrl: config.http.publicUrl,
      reportsPort: config.dev.reportsPort,
      githubPort: config.dev.githubPort,
      upstreamPort: config.dev.upstreamPort,
    },
    secrets,
  );
}

/** The CAs the running broker trusts beside the system roots (src/main.ts): the development CA, and TLS_CA_FILE. */
export async function deploymentCas(config: Readonly<Config>): Promise<string[]> {
  try {
    return await readTrustedCas({
      devCaFile: config.mode === 'production' ? undefined : join(config.dataDir, 'tls', 'ca.pem'),
      caFile: config.tls.caFile,
    });
  } catch (err) {
    if (err instanceof CaFileError) throw new DeploymentError(err.message);
    throw err;
  }
}

/**
 * The fetch the running broker calls providers with: the system's CAs and deploymentCas, and its
 * egress guard (EGRESS_ALLOW), so a check refuses what the broker would.
 */
export async function deploymentFetch(config: Readonly<Config>): Promise<Fetch> {
  return createFetch({
    extraCaPems: await deploymentCas(config),
    egress: createEgressGuard({ allow: config.egress.allow }),
  });
}
