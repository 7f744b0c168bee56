import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { listenHttps, type TlsPair } from '../src/runtime/httpsServer.js';
import { equalInConstantTime } from '../src/shared/tokens.js';
import { readBody } from '../src/web/requestBody.js';

/** A refresh the token server answered: whose, and when its answer left (performance.now()). */
export interface ServedRefresh {
  subject: string;
  servedAt: number;
}

export interface RefreshProvider {
  /** e.g. https://127.0.0.1:40123; the token endpoint is `${origin}/token`, the API `${origin}/api`. */
  origin: string;
  /** The PROVIDERS_FILE entry that points a broker at it (a custom `kind: oauth2` provider). */
  entry(id: string, scopes: readonly string[]): Record<string, unknown>;
  /** A token set for `subject` as a past authorization would have left it: the access token dies at `expiresAt`. */
  issue(subject: string, expiresAt: Date): { accessToken: string; refreshToken: string };
  /** Every refresh it granted, in the order it answered them. */
  served: readonly ServedRefresh[];
  /** The refresh token `subject` holds now (the last one issued to it). */
  liveRefreshTokenOf(subject: string): string | undefined;
  counts(): RefreshProviderCounts;
  close(): Promise<void>;
}

export interface RefreshProviderCounts {
  /** A refresh token presented again after it was spent (refused invalid_grant): a lost rotation. */
  reusedRefreshTokens: number;
  /** Token requests it refused for any other reason (unknown token, client, grant or body). */
  refusedTokenRequests: number;
  apiCalls: number;
  /** API calls with an access token that was unknown or past its expiry (answered 401 invalid_token). */
  apiRefused: number;
}

const CLIENT_ID = 'refresh-bench';
/** A new access token's lifetime: far past the proactive refresh's horizon, so each connection is renewed once. */
const ACCESS_TOKEN_SECONDS = 3600;
const MAX_BODY_BYTES = 8 * 1024;

/**
 * A small OAuth 2.0 authorization server for the refresh bench, on the bench's TLS: its token
 * endpoint answers `grant_type=refresh_token` (client_secret_basic) after a delay drawn from
 * `delayMs`, as a provider across a network does, with a new access token and a rotated refresh
 * token; the spent one is refused from then on with invalid_grant (RFC 6749 §5.2), as providers
 * that rotate do (RFC 9700 §4.14.2), and counted. `GET /api/whoami` (Bearer) answers whose live
 * access token it was given. Only the refresh grant exists: the bench seeds the first token sets.
 */
export async function startRefreshProvider(options: {
  tls: TlsPair;
  delayMs: { min: number; max: number };
}): Promise<RefreshProvider> {
  const clientSecret = randomBytes(24).toString('base64url');
  const accessTokens = new Map<string, { subject: string; expiresAt: number }>();
  const refreshTokens = new Map<string, { subject: string; spent: boolean }>();
  const live = new Map<string, string>();
  const served: ServedRefresh[] = [];
  const counts: RefreshProviderCounts = { reusedRefreshTokens: 0, refusedTokenRequests: 0, apiCalls: 0, apiRefused: 0 };
  const token = () => randomBytes(24).toString('base64url');
  const issue = (subject: string, expiresAt: number) => {
    const accessToken = token();
    const refreshToken = token();
    accessTokens.set(accessToken, { subject, expiresAt });
    refreshTokens.set(refreshToken, { subject, spent: false });
    live.set(subject, refreshToken);
    return { accessToken, refreshToken };
  };
  // client_secret_basic: each half form-encoded before base64 (RFC 6749 §2.3.1), as openid-client sends it.
  const authenticated = (req: IncomingMessage) => {
    const encoded = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const [id, secret] = Buffer.from(encoded ?? '', 'base64')
      .toString('utf8')
      .split(':')
      .map((part) => decodeURIComponent(part.replace(/\+/g, ' ')));
    return id === CLIENT_ID && secret !== undefined && equalInConstantTime(secret, clientSecret);
  };

  const refreshGrant = async (req: IncomingMessage, res: ServerResponse) => {
    const form = new URLSearchParams(await readBody(req, MAX_BODY_BYTES));
    const presented = form.get('refresh_token') ?? '';
    const held = refreshTokens.get(presented);
    if (!authenticated(req) || form.get('grant_type') !== 'refresh_token' || !held || held.spent) {
      if (held?.spent) counts.reusedRefreshTokens++;
      else counts.refusedTokenRequests++;
      const error = authenticated(req) ? 'invalid_grant' : 'invalid_client';
      return json(res, error === 'invalid_client' ? 401 : 400, { error });
    }
    // Spent the moment it arrives: a second request with it, even one in flight beside this, is refused.
    held.spent = true;
    const tokens = issue(held.subject, Date.now() + ACCESS_TOKEN_SECONDS * 1000);
    const { min, max } = options.delayMs;
    await sleep(min + Math.random() * (max - min));
    json(res, 200, {
      access_token: tokens.accessToken,
      token_type: 'Bearer',
      expires_in: ACCESS_TOKEN_SECONDS,
      refresh_token: tokens.refreshToken,
    });
    served.push({ subject: held.subject, servedAt: performance.now() });
  };

  const whoami = (req: IncomingMessage, res: ServerResponse) => {
    counts.apiCalls++;
    const presented = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const access = accessTokens.get(presented);
    if (!access || access.expiresAt <= Date.now()) {
      counts.apiRefused++;
      res.setHeader('www-authenticate', 'Bearer error="invalid_token"');
      return json(res, 401, { error: 'invalid_token' });
    }
    json(res, 200, { account: access.subject });
  };

  const server = await listenHttps(
    options.tls,
    (req, res) => {
      const path = req.url?.split('?')[0];
      if (req.method === 'POST' && path === '/token')
        refreshGrant(req, res).catch(() => {
          counts.refusedTokenRequests++;
          if (!res.headersSent) json(res, 400, { error: 'invalid_request' });
        });
      else if (req.method === 'GET' && path === '/api/whoami') whoami(req, res);
      else json(res, 404, { error: 'not_found' });
    },
    '127.0.0.1',
    0,
    'refresh bench provider',
  );
  const origin = `https://127.0.0.1:${server.port}`;
  return {
    origin,
    entry: (id, scopes) => ({
      id,
      kind: 'oauth2',
      displayName: 'Refresh Bench',
      docs: 'https://www.rfc-editor.org/rfc/rfc6749#section-6',
      authorizationEndpoint: `${origin}/authorize`,
      tokenEndpoint: `${origin}/token`,
      identity: { from: 'call', method: 'GET', url: `${origin}/api/whoami`, subjectPath: 'account' },
      clientAuth: 'client_secret_basic',
      pkce: true,
      apiBase: `${origin}/api`,
      clientId: CLIENT_ID,
      clientSecret,
      scopes: [...scopes],
    }),
    issue: (subject, expiresAt) => issue(subject, expiresAt.getTime()),
    served,
    liveRefreshTokenOf: (subject) => live.get(subject),
    counts: () => ({ ...counts }),
    close: () => server.close(0),
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
}
