import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDevAuthServer, type DevAuthServer, type DevAuthServerOptions } from '../../src/dev/devAuthServer.js';
import { generateDevAuthKeys, toPublicJwks } from '../../src/dev/devAuthKeys.js';
import { createReportApi } from '../../src/dev/reportApi.js';
import type { ReportStore } from '../../src/dev/reportStore.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { createRender } from '../../src/web/render.js';
import type { TestClient } from './devOAuth.js';
import { listenHttps } from './httpsTestServer.js';

export interface RunningDevServer {
  issuer: string;
  auth: DevAuthServer;
  client: TestClient;
  close(): Promise<void>;
}

export interface DevServersFixture {
  tls: TlsMaterial;
  fetch: Fetch;
  idp: RunningDevServer & { mcpResource: string };
  reports: RunningDevServer & { apiResource: string; otherResource: string };
  close(): Promise<void>;
}

// Nothing listens on port 9 (discard): redirects there are stopped by the test browser.
const CALLBACK_ORIGIN = 'https://127.0.0.1:9';

/**
 * Starts the development IdP and the Report Service (with its API, backed by
 * `store`) on HTTPS port 0, each with one confidential client, as devStack does.
 */
export async function startDevServers(store: ReportStore): Promise<DevServersFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'dev-auth-'));
  const tls = await loadOrCreateLocalTls(dir);
  const render = createRender({ cache: false });
  const logger = createLogger({ level: 'error' });
  const base = { render, logger };

  const mcpResource = `${CALLBACK_ORIGIN}/mcp`;
  const idp = await start(tls, 'idp', (issuer) => ({
    ...base,
    issuer,
    brand: 'Development identity provider',
    cookiePrefix: 'idp',
    resources: [{ identifier: mcpResource, scope: 'mcp:tools', accessTokenTtlSeconds: 600 }],
    subjectOf: (login) => login,
    consent: 'implicit',
  }));

  const otherResource = `${CALLBACK_ORIGIN}/other-api`;
  const reports = await start(tls, 'reports', (issuer, keys) => ({
    ...base,
    issuer,
    brand: 'Report Service',
    cookiePrefix: 'reports',
    resources: [
      { identifier: `${issuer}/api`, scope: 'reports:read reports:write', accessTokenTtlSeconds: 600 },
      { identifier: otherResource, scope: 'other:read', accessTokenTtlSeconds: 600 },
    ],
    subjectOf: (login) => `rs-user-${login}`,
    consent: 'prompt',
    api: createReportApi({ issuer, audience: `${issuer}/api`, jwks: toPublicJwks(keys), store, logger }),
  }));

  return {
    tls,
    fetch: createFetch({ extraCaPems: [tls.caPem] }),
    idp: { ...idp, mcpResource },
    reports: { ...reports, apiResource: `${reports.issuer}/api`, otherResource },
    close: async () => {
      await Promise.all([idp.close(), reports.close()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

type Build = (issuer: string, keys: DevAuthServerOptions['keys']) => Omit<DevAuthServerOptions, 'keys' | 'clients'>;

async function start(tls: TlsMaterial, name: string, build: Build): Promise<RunningDevServer> {
  const https = await listenHttps(tls);
  const keys = await generateDevAuthKeys();
  const client: TestClient = {
    clientId: `${name}-test-client`,
    clientSecret: `${name}-test-secret`,
    redirectUri: `${CALLBACK_ORIGIN}/${name}/callback`,
  };
  const auth = createDevAuthServer({
    ...build(https.origin, keys),
    keys,
    clients: [
      {
        clientId: client.clientId,
        clientSecret: client.clientSecret,
        redirectUris: [client.redirectUri],
        postLogoutRedirectUris: [`${CALLBACK_ORIGIN}/${name}/signed-out`],
        name: `${name} test client`,
      },
    ],
  });
  https.setHandler(auth.handler);
  return { issuer: https.origin, auth, client, close: () => https.close() };
}
