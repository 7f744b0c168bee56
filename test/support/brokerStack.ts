import { mkdtemp, rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RequestListener } from 'node:http';
import { createApp } from '../../src/app.js';
import { readMigrations } from '../../src/db/migrate.js';
import { loadOrCreateDevSecrets, type DevSecrets } from '../../src/dev/devSecrets.js';
import { startDevStack, type DevStack } from '../../src/dev/devStack.js';
import { createOidcClient } from '../../src/oauth/oauthClient.js';
import { listenHttps } from '../../src/runtime/httpsServer.js';
import { systemClock, type Clock } from '../../src/shared/clock.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { createRender } from '../../src/web/render.js';
import { createTestDb, type TestDb } from './testDb.js';

export interface BrokerStack {
  /** e.g. https://127.0.0.1:40123 */
  brokerUrl: string;
  mcpResourceUrl: string;
  dev: DevStack;
  /** The stack's generated development secrets (client secrets, keys). */
  secrets: DevSecrets;
  db: TestDb;
  tls: TlsMaterial;
  /** Every log line the broker and the development servers wrote (debug level). */
  logs: string[];
  /** A fetch that trusts the stack's CA. */
  fetch: Fetch;
  close(): Promise<void>;
}

/**
 * The broker as main.ts assembles it, on port 0, with the real development
 * identity provider and Report Service, and its own Postgres schema.
 */
export async function startBrokerStack(options: { clock?: Clock; sessionTtlSeconds?: number } = {}): Promise<BrokerStack> {
  const dir = await mkdtemp(join(tmpdir(), 'broker-stack-'));
  const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
  const secrets = await loadOrCreateDevSecrets(dir);
  const fetch = createFetch({ extraCaPems: [tls.caPem] });
  const render = createRender({ cache: false });
  const logs: string[] = [];
  const logger = createLogger(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs.push(chunk.toString('utf8'));
        done();
      },
    }),
  );
  const db = await createTestDb();

  let handler: RequestListener = (_req, res) => res.writeHead(503).end();
  const broker = await listenHttps(tls, (req, res) => handler(req, res), '127.0.0.1', 0, 'broker');
  const brokerUrl = `https://127.0.0.1:${broker.port}`;
  const publicUrl = new URL(brokerUrl);
  const mcpResourceUrl = `${brokerUrl}/mcp`;
  const dev = await startDevStack({
    host: '127.0.0.1',
    idpPort: 0,
    reportsPort: 0,
    tls,
    secrets,
    brokerPublicUrl: publicUrl,
    mcpResourceUrl,
    dataDir: undefined,
    render,
    logger,
  });
  handler = createApp({
    pool: db.pool,
    logger,
    clock: options.clock ?? systemClock,
    render,
    oidc: createOidcClient({ issuer: dev.idp.issuer, clientId: dev.idp.brokerClientId, clientSecret: new Secret(secrets.brokerIdpClientSecret), fetch }),
    migrations: await readMigrations(),
    publicUrl,
    mcpResourceUrl,
    sessionTtlSeconds: options.sessionTtlSeconds ?? 3600,
  });

  return {
    brokerUrl,
    mcpResourceUrl,
    dev,
    secrets,
    db,
    tls,
    logs,
    fetch,
    async close() {
      await broker.close(0);
      await dev.close(0);
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
