import type { RequestHandler } from 'express';
import { createDevAuthServer } from '../../src/dev/devAuthServer.js';
import { generateDevAuthKeys } from '../../src/dev/devAuthKeys.js';
import { listenHttps, type TlsPair } from '../../src/runtime/httpsServer.js';
import { createLogger } from '../../src/shared/logger.js';
import { createRender } from '../../src/web/render.js';

export interface PlainOAuthServer {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The token requests it received: whether each carried HTTP Basic client authentication. */
  tokenRequests: { basic: boolean }[];
  close(): Promise<void>;
}

/**
 * A plain OAuth 2.0 authorization server: oidc-provider with our sign-in and
 * consent pages, no resource servers (so its access tokens are opaque), the
 * broker registered as a client_secret_basic client with its redirect URIs,
 * and asked for no `openid` scope (so no ID Token). The subject at it is
 * `plain-<login>`, told by its identity endpoint `GET /api/me` (Bearer).
 */
/**
 * The server as a custom PROVIDERS_FILE entry: explicit endpoints and a
 * declared issuer (so `iss` is required), or with `metadataDiscovery` its
 * RFC 8414 metadata, the written endpoints then giving only the hosts.
 */
export function plainProviderEntry(
  server: PlainOAuthServer,
  options: { metadataDiscovery?: boolean } = {},
): Record<string, unknown> {
  const discovered = options.metadataDiscovery === true;
  return {
    id: 'plain',
    kind: 'oauth2',
    displayName: 'Plain OAuth',
    docs: discovered ? 'https://www.rfc-editor.org/rfc/rfc8414' : 'https://www.rfc-editor.org/rfc/rfc6749',
    issuer: server.issuer,
    metadataDiscovery: discovered,
    authorizationEndpoint: `${server.issuer}/${discovered ? 'written-authorize' : 'auth'}`,
    tokenEndpoint: `${server.issuer}/${discovered ? 'written-token' : 'token'}`,
    identity: { from: 'call', method: 'GET', url: `${server.issuer}/api/me`, subjectPath: 'sub', namePath: 'login' },
    clientAuth: 'client_secret_basic',
    pkce: true,
    apiBase: `${server.issuer}/api`,
    clientId: server.clientId,
    clientSecret: server.clientSecret,
    scopes: ['profile'],
  };
}

export async function startPlainOAuthServer(options: {
  tls: TlsPair;
  redirectUri: string | string[];
}): Promise<PlainOAuthServer> {
  let handler: Parameters<typeof listenHttps>[1] = (_req, res) => res.writeHead(503).end();
  const tokenRequests: PlainOAuthServer['tokenRequests'] = [];
  const server = await listenHttps(
    options.tls,
    (req, res) => {
      if (req.method === 'POST' && req.url?.startsWith('/token'))
        tokenRequests.push({ basic: /^Basic /i.test(req.headers.authorization ?? '') });
      handler(req, res);
    },
    '127.0.0.1',
    0,
    'plain OAuth 2.0 server',
  );
  const issuer = `https://127.0.0.1:${server.port}`;
  const clientId = 'connect-broker-plain';
  const clientSecret = 'plain-client-secret-canary';
  // The identity call of a plain OAuth 2.0 API: who the opaque Bearer token belongs to.
  const api: RequestHandler = (req, res) => {
    const presented = /^Bearer (\S+)$/i.exec(req.get('authorization') ?? '')?.[1];
    if (req.method !== 'GET' || req.path !== '/me') return void res.status(404).json({ error: 'not_found' });
    void (async () => {
      const token = presented === undefined ? undefined : await auth.provider.AccessToken.find(presented);
      if (!token || token.isExpired) return void res.status(401).json({ error: 'invalid_token' });
      res.json({ sub: token.accountId, login: token.accountId.replace(/^plain-/, '') });
    })();
  };
  const auth = createDevAuthServer({
    issuer,
    brand: 'Plain OAuth',
    cookiePrefix: 'plain',
    keys: await generateDevAuthKeys(),
    clients: [{ clientId, clientSecret, name: 'Connect Broker', redirectUris: [options.redirectUri].flat() }],
    resources: [],
    subjectOf: (login) => `plain-${login}`,
    consent: 'prompt',
    render: createRender({ cache: false }),
    logger: createLogger({ level: 'silent' }),
    api,
  });
  handler = auth.handler;
  return { issuer, clientId, clientSecret, tokenRequests, close: () => server.close(0) };
}
