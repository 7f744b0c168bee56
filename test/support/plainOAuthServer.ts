import { randomUUID } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import { createDevAuthServer } from '../../src/dev/devAuthServer.js';
import { generateDevAuthKeys } from '../../src/dev/devAuthKeys.js';
import { isObject } from '../../src/providers/conformers/responseFields.js';
import { listenHttps, type TlsPair } from '../../src/runtime/httpsServer.js';
import { createLogger } from '../../src/shared/logger.js';
import { createRender } from '../../src/web/render.js';

export interface PlainOAuthServer {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The token requests it received: whether each carried HTTP Basic client authentication, and its W3C `traceparent`. */
  tokenRequests: { basic: boolean; traceparent?: string }[];
  /** Every `POST /api/items` it received, in order, with the status it answered. */
  itemCalls: PlainItemCall[];
  /** The items it created (one per 201). */
  items: PlainItem[];
  /** Every access and refresh token it issued to `login`, in order (for leak checks). */
  tokensOf(login: string): string[];
  /** `login` withdraws the broker's access: the API answers 401 invalid_token to every token issued so far. */
  revokeTokensOf(login: string): void;
  close(): Promise<void>;
}

export interface PlainItem {
  id: string;
  title: string;
  /** The account (`plain-<login>`) the Bearer token belongs to. */
  owner: string;
}

export interface PlainItemCall {
  idempotencyKey: string | undefined;
  status: number;
  /** The W3C `traceparent` it came with (the broker's tracing on), else absent. */
  traceparent?: string;
}

/**
 * A plain OAuth 2.0 authorization server: oidc-provider with our sign-in and
 * consent pages, no resource servers (so its access tokens are opaque), the
 * broker registered as a client_secret_basic client with its redirect URIs,
 * and asked for no `openid` scope (so no ID Token). The subject at it is
 * `plain-<login>`, told by its identity endpoint `GET /api/me` (Bearer).
 * Its one business endpoint, `POST /api/items` (Bearer, JSON `{ title }`),
 * answers 201 with a new item on every call, as most APIs do: it does not
 * dedupe by `Idempotency-Key`, so a call performed twice shows as two items.
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
        tokenRequests.push({
          basic: /^Basic /i.test(req.headers.authorization ?? ''),
          ...(typeof req.headers.traceparent === 'string' && { traceparent: req.headers.traceparent }),
        });
      handler(req, res);
    },
    '127.0.0.1',
    0,
    'plain OAuth 2.0 server',
  );
  const issuer = `https://127.0.0.1:${server.port}`;
  const clientId = 'connect-broker-plain';
  const clientSecret = 'plain-client-secret-canary';
  const issued: { value: string; accountId: string }[] = [];
  const revoked = new Set<string>();
  const itemCalls: PlainItemCall[] = [];
  const items: PlainItem[] = [];
  /** The account of the request's live Bearer token (RFC 6750 §2.1), or undefined after a 401 invalid_token (§3.1). */
  const callerOf = async (req: Request, res: Response): Promise<string | undefined> => {
    const presented = /^Bearer (\S+)$/i.exec(req.get('authorization') ?? '')?.[1];
    const token = presented === undefined ? undefined : await auth.provider.AccessToken.find(presented);
    if (token && !token.isExpired && !revoked.has(presented!)) return token.accountId;
    res.status(401).set('WWW-Authenticate', 'Bearer error="invalid_token"').json({ error: 'invalid_token' });
    return undefined;
  };
  const api = express.Router();
  // The identity call of a plain OAuth 2.0 API: who the opaque Bearer token belongs to.
  api.get('/me', (req, res) => {
    void callerOf(req, res).then((account) => {
      if (account !== undefined) res.json({ sub: account, login: account.replace(/^plain-/, '') });
    });
  });
  api.post('/items', express.json({ limit: '8kb' }), (req, res) => {
    const call: PlainItemCall = { idempotencyKey: req.get('idempotency-key'), status: 401 };
    const traceparent = req.get('traceparent');
    if (traceparent !== undefined) call.traceparent = traceparent;
    itemCalls.push(call);
    void callerOf(req, res).then((owner) => {
      if (owner === undefined) return;
      const title: unknown = isObject(req.body) ? req.body['title'] : undefined;
      if (typeof title !== 'string' || title === '') {
        call.status = 400;
        return void res.status(400).json({ error: 'invalid_request', error_description: 'title is required' });
      }
      const item = { id: randomUUID(), title, owner };
      items.push(item);
      call.status = 201;
      res.status(201).json({ item: { id: item.id, title: item.title } });
    });
  });
  api.use((_req, res) => void res.status(404).json({ error: 'not_found' }));
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
  // oidc-provider emits each token it stores; opaque tokens' values are their `jti`.
  const keepIssued = (token: unknown) => {
    if (isObject(token) && typeof token['jti'] === 'string' && typeof token['accountId'] === 'string')
      issued.push({ value: token['jti'], accountId: token['accountId'] });
  };
  auth.provider.on('access_token.saved', keepIssued);
  auth.provider.on('refresh_token.saved', keepIssued);
  handler = auth.handler;
  const issuedTo = (login: string) => issued.filter((t) => t.accountId === `plain-${login}`).map((t) => t.value);
  return {
    issuer,
    clientId,
    clientSecret,
    tokenRequests,
    itemCalls,
    items,
    tokensOf: issuedTo,
    revokeTokensOf: (login) => issuedTo(login).forEach((value) => revoked.add(value)),
    close: () => server.close(0),
  };
}
