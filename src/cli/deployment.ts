import { join } from 'node:path';
import type { Config } from '../config/config.js';
import { runningEmbeddedPostgresUrl } from '../db/embeddedPostgres.js';
import { Secret } from '../shared/secret.js';

/** The CLI cannot find what the running broker uses (exit 2). */
export class DeploymentError extends Error {
  readonly exitCode = 2;
}

/** DATABASE_URL, or outside production the embedded Postgres `npm start` is running. */
export async function databaseUrl(config: Readonly<Config>): Promise<Secret> {
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
