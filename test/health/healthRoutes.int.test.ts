import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { healthRoutes, type IdentityProviderCheck } from '../../src/health/healthRoutes.js';
import { createOidcClient } from '../../src/oauth/oauthClient.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { freePorts } from '../support/brokerProcess.js';
import { startTcpProxy } from '../support/tcpProxy.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

describe('health routes', () => {
  let db: TestDb | undefined;
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => server?.close(r));
    await db?.drop();
  });

  async function serve(testDb: TestDb, identityProvider?: IdentityProviderCheck): Promise<string> {
    const app = express().use(
      healthRoutes({
        pool: testDb.pool,
        migrations: await readMigrations(),
        logger: createLogger({ level: 'silent' }),
        ...(identityProvider && { identityProvider }),
      }),
    );
    server = createServer(app).listen(0, '127.0.0.1');
    await new Promise((r) => server!.once('listening', r));
    return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  }

  it('answers /healthz while the process runs', async () => {
    db = await createTestDb({ migrate: false });
    const base = await serve(db);
    const response = await fetch(`${base}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('is not ready until every migration is applied, then ready', async () => {
    db = await createTestDb({ migrate: false });
    const base = await serve(db);
    const before = await fetch(`${base}/readyz`);
    expect(before.status).toBe(503);
    expect(await before.json()).toMatchObject({
      status: 'not_ready',
      database: 'ok',
      migrations: { current: false, applied: 0 },
      reasons: [expect.stringMatching(/^database: \d+ migrations not applied$/)],
    });
    await migrate(db.pool);
    const after = await fetch(`${base}/readyz`);
    expect(after.status).toBe(200);
    expect(await after.json()).toMatchObject({ status: 'ready', migrations: { current: true } });
  });

  it('says not ready within 2 s when the database does not answer, and ready again once it does', async () => {
    const direct = new URL(inject('databaseUrl'));
    const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    try {
      db = await createTestDb({ poolUrl: proxy.via(direct.href) });
      const base = await serve(db);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      // Connections accepted and never answered: the pool would wait its 5 s connect timeout.
      await proxy.stall();
      const started = Date.now();
      const stalled = await fetch(`${base}/readyz`);
      const elapsed = Date.now() - started;
      expect(stalled.status).toBe(503);
      expect(await stalled.json()).toEqual({
        status: 'not_ready',
        database: 'unreachable',
        reasons: ['database: no answer within 2 s'],
      });
      expect(elapsed).toBeGreaterThanOrEqual(1_900);
      expect(elapsed).toBeLessThan(3_000);
      await proxy.restore();
      await expect.poll(async () => (await fetch(`${base}/readyz`)).status, { timeout: 10_000 }).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it('is not ready when the database does not answer', async () => {
    db = await createTestDb();
    const base = await serve(db);
    await db.pool.end();
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({
      status: 'not_ready',
      database: 'unreachable',
      reasons: ['database: unreachable (the log says why)'],
    });
    db = undefined; // its pool is closed; the schema goes with the run's database
  });
});

describe('readiness and the identity provider', () => {
  const CLIENT_SECRET = 'client-secret-canary-5d1e';
  let db: TestDb | undefined;
  let server: Server | undefined;
  let issuerServer: Server | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await new Promise((r) => server?.close(r));
    issuerServer?.closeAllConnections();
    await new Promise((r) => issuerServer?.close(r));
    issuerServer = undefined;
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** /readyz and /healthz over the broker's own sign-in client of an issuer on `port` (nothing listening there yet). */
  async function serve(port: number): Promise<{ base: string; issuer: string; tls: TlsMaterial }> {
    db = await createTestDb();
    dir = await mkdtemp(join(tmpdir(), 'readyz-idp-'));
    const tls = await loadOrCreateLocalTls(dir);
    const issuer = `https://127.0.0.1:${port}`;
    const oidc = createOidcClient({
      issuer,
      clientId: 'connect-broker',
      clientSecret: new Secret(CLIENT_SECRET),
      fetch: createFetch({ extraCaPems: [tls.caPem], timeoutMs: 1_000 }),
      allowLoopback: true,
    });
    const app = express().use(
      healthRoutes({
        pool: db.pool,
        migrations: await readMigrations(),
        logger: createLogger({ level: 'silent' }),
        identityProvider: { issuer, problem: () => oidc.problem() },
      }),
    );
    server = createServer(app).listen(0, '127.0.0.1');
    await new Promise((r) => server!.once('listening', r));
    return { base: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, issuer, tls };
  }

  function discoveryDocument(issuer: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      issuer,
      authorization_endpoint: `${issuer}/auth`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      ...extra,
    };
  }

  /** The issuer comes up on the port the broker was told of: it serves its discovery document. */
  async function startIssuer(tls: TlsMaterial, port: number, document: Record<string, unknown>): Promise<void> {
    issuerServer = createHttpsServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
      res.writeHead(req.url === '/.well-known/openid-configuration' ? 200 : 404, {
        'content-type': 'application/json',
      });
      res.end(JSON.stringify(document));
    }).listen(port, '127.0.0.1');
    await new Promise((r) => issuerServer!.once('listening', r));
  }

  it('is not ready while the issuer does not answer discovery, says why without a secret, and is ready once it answers; /healthz stays ok', async () => {
    const [port] = await freePorts(1);
    const { base, issuer, tls } = await serve(port!);
    const down = await fetch(`${base}/readyz`);
    expect(down.status).toBe(503);
    const text = await down.text();
    expect(JSON.parse(text)).toEqual({
      status: 'not_ready',
      database: 'ok',
      migrations: expect.objectContaining({ current: true }),
      identityProvider: 'unavailable',
      reasons: [`identity provider ${issuer}: discovery failed (ECONNREFUSED); retrying`],
    });
    expect(text).not.toContain(CLIENT_SECRET);
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });

    await startIssuer(tls, port!, discoveryDocument(issuer));
    const up = await fetch(`${base}/readyz`);
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({
      status: 'ready',
      database: 'ok',
      migrations: expect.objectContaining({ current: true }),
      identityProvider: 'ok',
    });
  });

  it('is not ready when the issuer advertises no PKCE S256 and no code response type, naming both', async () => {
    const [port] = await freePorts(1);
    const { base, issuer, tls } = await serve(port!);
    await startIssuer(
      tls,
      port!,
      discoveryDocument(issuer, {
        response_types_supported: ['id_token'],
        code_challenge_methods_supported: ['plain'],
      }),
    );
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({
      identityProvider: 'unavailable',
      reasons: [
        `identity provider ${issuer}: discovery failed (its metadata advertises no response type "code" (response_types_supported), no PKCE S256 (code_challenge_methods_supported)); retrying`,
      ],
    });
  });
});
