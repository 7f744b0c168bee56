import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevAuthKeys } from '../../src/dev/devAuthKeys.js';
import { createDevAuthServer } from '../../src/dev/devAuthServer.js';
import { openFileAdapter } from '../../src/dev/devProviderAdapter.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { createRender } from '../../src/web/render.js';
import { authorizeCode, exchangeCode, type TestClient, tokenRequest } from '../support/devOAuth.js';
import { type HttpsTestServer, listenHttps } from '../support/httpsTestServer.js';
import { createTestBrowser } from '../support/testBrowser.js';

let dir: string;
let tls: TlsMaterial;
let https: HttpsTestServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dev-adapter-'));
  tls = await loadOrCreateLocalTls(dir);
  https = await listenHttps(tls);
});

afterAll(async () => {
  await https?.close();
  await rm(dir, { recursive: true, force: true });
});

const client: TestClient = {
  clientId: 'restart-client',
  clientSecret: 'restart-secret',
  redirectUri: 'https://127.0.0.1:9/callback',
};

describe('file adapter for oidc-provider', () => {
  it('honours a refresh token issued before the server restarted', async () => {
    const keys = await generateDevAuthKeys();
    const stateFile = join(dir, 'provider-state.json');
    const start = async () =>
      createDevAuthServer({
        issuer: https.origin,
        brand: 'Report Service',
        cookiePrefix: 'reports',
        keys,
        clients: [{ clientId: client.clientId, clientSecret: client.clientSecret, redirectUris: [client.redirectUri] }],
        resources: [{ identifier: `${https.origin}/api`, scope: 'reports:read', accessTokenTtlSeconds: 60 }],
        subjectOf: (login) => `rs-user-${login}`,
        consent: 'prompt',
        render: createRender({ cache: false }),
        logger: createLogger({ level: 'error' }),
        adapter: await openFileAdapter(stateFile),
      });
    const fetch = createFetch({ extraCaPems: [tls.caPem] });

    https.setHandler((await start()).handler);
    const authorized = await authorizeCode(createTestBrowser({ fetch }), {
      issuer: https.origin,
      client,
      scope: 'reports:read',
      login: 'alice',
      allowConsent: true,
    });
    const tokens = await exchangeCode(fetch, https.origin, client, authorized);
    expect(tokens.status).toBe(200);

    https.setHandler((await start()).handler);
    const refreshed = await tokenRequest(fetch, https.origin, client, {
      grant_type: 'refresh_token',
      refresh_token: String(tokens.body['refresh_token']),
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body['access_token']).toEqual(expect.any(String));

    const replayedCode = await exchangeCode(fetch, https.origin, client, authorized);
    expect(replayedCode.body['error']).toBe('invalid_grant');
  });
});
