import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import type { Fetch } from '../../src/shared/httpClient.js';
import type { TlsMaterial } from '../../src/tls/localCa.js';
import type { BrokerProcess } from '../support/brokerProcess.js';
import { freePorts } from '../support/brokerProcess.js';
import { startHaproxy, type Balancer } from '../support/haproxy.js';
import { NGINX_TEMPLATES, startNginx } from '../support/nginx.js';
import { brokerCli, startBroker, startService, stopService } from './rehearsalProcesses.js';
import { productionValues, rehearsalEnv, type RehearsalEnv } from './rehearsalEnv.js';
import { HOSTS, rehearsalFetch } from './rehearsalHosts.js';

// One full run of the rehearsal, set up: a fresh database on the machine's Postgres, the identity
// provider, the provider emulator and the upstream server in their own processes, the migration
// step, the built broker, and in front of it, by mode:
// - `proxy-http`: nginx (deploy/nginx-tls-terminated.conf.template) ends TLS and speaks HTTP to the broker;
// - `proxy-tls`: HAProxy (deploy/haproxy.cfg) ends TLS and re-encrypts to the broker's own
//   certificate, as the production overlay's ingress does;
// - `direct`: nothing; the broker ends TLS itself.

export type Mode = 'proxy-http' | 'proxy-tls' | 'direct';
export const MODES: readonly Mode[] = ['proxy-http', 'proxy-tls', 'direct'];

/** Where the rehearsal makes its databases: a server with trust auth for postgres (CI: the machine's own). */
const ADMIN_URL = process.env['REHEARSAL_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export const HOST_CLIENT_ID = 'mcp-host';
/** An upstream create_note with this title is answered late: the call in flight when SIGTERM comes. */
export const SLOW_TITLE = 'in flight at SIGTERM';

export interface Rehearsal {
  mode: Mode;
  publicUrl: string;
  mcpUrl: string;
  issuer: string;
  env: Record<string, string>;
  deployment: RehearsalEnv;
  users: { login: string; password: string; name: string; roles: string[] }[];
  fetch: Fetch;
  db: pg.Pool;
  broker: BrokerProcess;
  upstream: BrokerProcess;
  githubStoreFile: string;
  imageDir: string;
  stop(): Promise<void>;
}

export async function startRehearsal(
  mode: Mode,
  imageDir: string,
  tls: TlsMaterial,
  workDir: string,
): Promise<Rehearsal> {
  const dir = join(workDir, mode);
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'data'), { recursive: true });
  const files = { cert: join(dir, 'server.pem'), key: join(dir, 'server-key.pem'), ca: join(dir, 'ca.pem') };
  await writeFile(files.cert, tls.certPem);
  await writeFile(files.key, tls.keyPem, { mode: 0o600 });
  await writeFile(files.ca, tls.caPem);
  const [idpPort, githubPort, mcpPort, authPort, brokerPort, proxyPort] = await freePorts(6);
  const publicUrl = `https://${HOSTS.broker}:${mode === 'direct' ? brokerPort : proxyPort}`;
  const issuer = `https://${HOSTS.idp}:${idpPort}`;
  const database = `rehearsal_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  const databaseUrl = Object.assign(new URL(ADMIN_URL), { pathname: `/${database}` }).href;
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  // Run last to first: the test's pool ends before the database is dropped.
  const cleanups: (() => Promise<unknown>)[] = [
    async () => {
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await client.end();
    },
    () => db.end(),
  ];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const deployment = rehearsalEnv(
      await productionValues(),
      {
        host: '127.0.0.1',
        port: brokerPort!,
        publicUrl,
        issuer,
        dataDir: join(dir, 'data'),
        certFile: files.cert,
        keyFile: files.key,
        caFile: files.ca,
        providersFile: join(dir, 'providers.yaml'),
        toolsFile: join(dir, 'tools.yaml'),
        databaseUrl,
        githubHost: `${HOSTS.github}:${githubPort}`,
        upstreamUrl: `https://${HOSTS.upstream}:${mcpPort}/mcp`,
      },
      mode === 'proxy-http' ? 'proxy' : 'broker',
    );
    await writeFile(join(dir, 'providers.yaml'), deployment.providersYaml);
    await writeFile(join(dir, 'tools.yaml'), deployment.toolsYaml);
    const env = deployment.env;
    const users = [
      { login: 'alice', password: randomBytes(9).toString('base64url'), name: 'Alice Example', roles: [] },
      {
        login: 'olivia',
        password: randomBytes(9).toString('base64url'),
        name: 'Olivia Operator',
        roles: [deployment.operators.role],
      },
    ];
    const githubStoreFile = join(dir, 'github.json');
    const [idp, github, upstream] = await Promise.all([
      startService('idpServer.ts', {
        port: idpPort,
        issuer,
        certFile: files.cert,
        keyFile: files.key,
        broker: { ...deployment.oidc, redirectUri: `${publicUrl}/auth/callback` },
        hostClientId: HOST_CLIENT_ID,
        mcpResource: `${publicUrl}/mcp`,
        roleClaim: deployment.operators.roleClaim,
        users,
      }),
      startService('githubEmulator.ts', {
        port: githubPort,
        origin: `https://${HOSTS.github}:${githubPort}`,
        certFile: files.cert,
        keyFile: files.key,
        storeFile: githubStoreFile,
        app: { ...deployment.github, callbackUrl: `${publicUrl}/oauth/callback/github` },
      }),
      startService('upstreamServer.ts', {
        hostname: HOSTS.upstream,
        mcpPort,
        authPort,
        certFile: files.cert,
        keyFile: files.key,
        caFile: files.ca,
        slowTitle: SLOW_TITLE,
        slowMs: 3_000,
      }),
    ]);
    cleanups.push(() => Promise.all([idp, github, upstream].map(stopService)));
    // The documented steps before a start, where the build's CLI has them: `broker migrate` (else the
    // service migrates at start) and `broker doctor`, which must find nothing wrong.
    const help = (await brokerCli(imageDir, env, ['help'])).output;
    for (const command of ['migrate', 'doctor'])
      if (new RegExp(`^ {2}${command}\\b`, 'm').test(help)) {
        const run = await brokerCli(imageDir, env, [command]);
        if (run.code !== 0) throw new Error(`broker ${command} exited ${run.code}:\n${run.output}`);
        if (command === 'doctor') process.stderr.write(`[${mode}] broker doctor:\n${run.output}`);
      }
    const broker = startBroker(imageDir, env);
    cleanups.push(() => stopService(broker));
    await broker.waitFor('broker listening', 30_000);
    let balancer: Balancer | undefined;
    const instance = `127.0.0.1:${brokerPort}`;
    if (mode === 'proxy-tls')
      balancer = await startHaproxy({ port: proxyPort!, instances: [instance, instance, instance], tls, dir });
    if (mode === 'proxy-http')
      balancer = await startNginx({
        port: proxyPort!,
        template: NGINX_TEMPLATES.terminated,
        instances: [instance],
        tls,
        dir,
      });
    if (balancer) cleanups.push(() => balancer.stop());
    const fetch = rehearsalFetch(tls.caPem);
    await untilReady(fetch, publicUrl, () => `${broker.output()}\n${balancer?.output() ?? ''}`);
    return {
      mode,
      publicUrl,
      mcpUrl: `${publicUrl}/mcp`,
      issuer,
      env,
      deployment,
      users,
      fetch,
      db,
      broker,
      upstream,
      githubStoreFile,
      imageDir,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function untilReady(fetch: Fetch, publicUrl: string, output: () => string): Promise<void> {
  let last = '';
  for (let i = 0; i < 100; i++) {
    const response = await fetch(`${publicUrl}/readyz`).catch((err: unknown) => err as Error);
    if (!(response instanceof Error) && response.status === 200) return;
    last = response instanceof Error ? response.message : `${response.status} ${await response.text()}`;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${publicUrl}/readyz never answered 200 (last: ${last}); output:\n${output().slice(-4000)}`);
}
