import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { githubDevProvider, type DevStack } from '../../src/dev/devStack.js';
import type { DevSecrets } from '../../src/dev/devSecrets.js';
import { runTs, type BrokerProcess } from './brokerProcess.js';

// Several src/main.ts processes as one deployment behind a balancer: one public origin (PUBLIC_URL is
// the balancer's), one identity provider and GitHub-like provider (the caller's, in its process), the
// same SECRET_KEYS and certificate, one database; each its own DATA_DIR and port. The balancer test
// (test/scale/balancer.int.test.ts) and npm run bench:scale start them here.

export interface BrokerInstance {
  /** broker1, broker2…: the `server` names of deploy/haproxy.cfg, as X-Served-By gives them. */
  name: string;
  port: number;
  process: BrokerProcess;
}

export interface InstancesOptions {
  /** Holds tls/ (the certificate every instance serves) and gets one DATA_DIR per instance. */
  dir: string;
  secrets: DevSecrets;
  dev: DevStack;
  balancerUrl: string;
  ports: readonly number[];
  /** Postgres, and the schema the instances work in (chosen through the URL's `options`). */
  databaseUrl: string;
  schema: string;
  /** Through a transaction-mode pooler: DATABASE_URL (its role's search_path is the schema), with databaseUrl as DATABASE_DIRECT_URL. */
  pooledUrl?: string;
  /** Extra environment for every instance. */
  env?: Record<string, string>;
}

/** Starts one instance per port: the first alone (it applies the migrations and seeds), then the rest together. */
export async function startBrokerInstances(options: InstancesOptions): Promise<BrokerInstance[]> {
  const providersFile = join(options.dir, 'providers.json');
  await writeFile(providersFile, JSON.stringify([githubDevProvider(options.dev.github!)]));
  const direct = new URL(options.databaseUrl);
  direct.searchParams.set('options', `-c search_path=${options.schema}`);
  const instances: BrokerInstance[] = [];
  const start = async (index: number) => {
    const dataDir = join(options.dir, `broker${index + 1}`);
    await mkdir(join(dataDir, 'tls'), { recursive: true, mode: 0o700 });
    // One certificate for every instance (the balancer checks it against the CA).
    for (const file of ['ca.pem', 'server.pem', 'server-key.pem', 'ca-key.pem'])
      await copyFile(join(options.dir, 'tls', file), join(dataDir, 'tls', file));
    const port = options.ports[index]!;
    const child = runTs('src/main.ts', [], {
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: options.balancerUrl,
      ...(options.pooledUrl
        ? { DATABASE_URL: options.pooledUrl, DATABASE_DIRECT_URL: direct.href }
        : { DATABASE_URL: direct.href }),
      OIDC_ISSUER: options.dev.idp.issuer,
      OIDC_CLIENT_SECRET: options.secrets.brokerIdpClientSecret,
      SECRET_KEYS: options.secrets.secretKeys.map((k) => `${k.kid}:${k.key}`).join(','),
      PROVIDERS_FILE: providersFile,
      // Each development mode instance starts its own development servers: on free ports, unused here.
      DEV_IDP_PORT: '0',
      DEV_REPORTS_PORT: '0',
      DEV_GITHUB_PORT: '0',
      LOG_LEVEL: 'warn',
      ...options.env,
    });
    instances[index] = { name: `broker${index + 1}`, port, process: child };
    await child.waitFor('Connect Broker is running.', 90_000);
  };
  try {
    await start(0);
    await Promise.all(options.ports.slice(1).map((_, i) => start(i + 1)));
  } catch (err) {
    await stopBrokerInstances(instances);
    throw err;
  }
  return instances;
}

/** SIGTERM to every instance still running, and its exit awaited. */
export async function stopBrokerInstances(instances: readonly (BrokerInstance | undefined)[]): Promise<void> {
  await Promise.all(
    instances.map(async (instance) => {
      if (!instance) return;
      const { child, exited } = instance.process;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    }),
  );
}
