import { createHash, randomBytes } from 'node:crypto';
import type { Fetch } from '../shared/httpClient.js';

export interface DevTokenRequest {
  issuer: string;
  resource: string;
  login: string;
  password: string;
  fetch: Fetch;
  /** A public client of the identity provider with DEV_TOKEN_REDIRECT_URI (default: the broker's own dev-token client). */
  clientId?: string;
}

/**
 * Gets an MCP access token from the running development identity provider
 * the way an MCP host would: authorization code + PKCE with a resource
 * indicator, signing in through the provider's own login form.
 */
export async function fetchDevToken(request: DevTokenRequest): Promise<string> {
  // The development stack's client: loaded when asked for, as production code reaches src/dev/ only by dynamic import.
  const { DEV_TOKEN_CLIENT_ID, DEV_TOKEN_REDIRECT_URI } = await import('../dev/devTokenClient.js');
  const jar = new Map<string, string>();
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const authorize = new URL('/auth', request.issuer);
  authorize.search = new URLSearchParams({
    client_id: request.clientId ?? DEV_TOKEN_CLIENT_ID,
    response_type: 'code',
    redirect_uri: DEV_TOKEN_REDIRECT_URI,
    scope: 'openid mcp',
    resource: request.resource,
    state,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();

  let location = await follow(request, jar, authorize.href);
  const uid = /\/interaction\/([\w-]+)$/.exec(new URL(location).pathname)?.[1];
  if (!uid) throw new Error(`unexpected redirect from the identity provider: ${new URL(location).pathname}`);
  await send(request, jar, location, 'GET');
  const login = new URLSearchParams({ login: request.login, password: request.password });
  const afterLogin = await send(request, jar, new URL(`/interaction/${uid}/login`, request.issuer).href, 'POST', login);
  if (afterLogin.status === 400) throw new Error(`the identity provider refused the sign-in for ${request.login}`);
  location = await follow(request, jar, redirectTarget(afterLogin, request.issuer));
  // A client the provider does not know as its own asks for consent: the user allows it, as a person would.
  const consentUid =
    new URL(location).origin === new URL(request.issuer).origin
      ? /\/interaction\/([\w-]+)$/.exec(new URL(location).pathname)?.[1]
      : undefined;
  if (consentUid) {
    const allowed = await send(
      request,
      jar,
      new URL(`/interaction/${consentUid}/confirm`, request.issuer).href,
      'POST',
      new URLSearchParams(),
    );
    location = await follow(request, jar, redirectTarget(allowed, request.issuer));
  }

  const callback = new URL(location);
  if (callback.origin + callback.pathname !== DEV_TOKEN_REDIRECT_URI)
    throw new Error(`unexpected redirect: ${callback.pathname}`);
  if (callback.searchParams.get('state') !== state) throw new Error('state mismatch in the authorization response');
  const code = callback.searchParams.get('code');
  if (!code) throw new Error(`authorization failed: ${callback.searchParams.get('error') ?? 'no code'}`);

  const tokenResponse = await request.fetch(new URL('/token', request.issuer), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: request.clientId ?? DEV_TOKEN_CLIENT_ID,
      code,
      redirect_uri: DEV_TOKEN_REDIRECT_URI,
      code_verifier: verifier,
      resource: request.resource,
    }),
  });
  const body = (await tokenResponse.json()) as { access_token?: unknown; error?: unknown };
  if (!tokenResponse.ok || typeof body.access_token !== 'string')
    throw new Error(`token request failed: ${String(body.error ?? tokenResponse.status)}`);
  return body.access_token;
}

/** Follows redirects on the issuer's origin; returns the first Location that leaves it. */
async function follow(request: DevTokenRequest, jar: Map<string, string>, url: string): Promise<string> {
  let next = url;
  for (let hops = 0; hops < 10; hops++) {
    if (new URL(next).origin !== new URL(request.issuer).origin) return next;
    const response = await send(request, jar, next, 'GET');
    if (response.status < 300 || response.status >= 400) return next;
    next = redirectTarget(response, next);
  }
  throw new Error('too many redirects from the identity provider');
}

function redirectTarget(response: Response, base: string): string {
  const location = response.headers.get('location');
  if (!location) throw new Error(`expected a redirect, got HTTP ${response.status}`);
  return new URL(location, base).href;
}

async function send(
  request: DevTokenRequest,
  jar: Map<string, string>,
  url: string,
  method: string,
  body?: URLSearchParams,
): Promise<Response> {
  const headers: Record<string, string> = { accept: 'text/html' };
  if (jar.size > 0) headers['cookie'] = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
  const response = await request.fetch(url, { method, headers, redirect: 'manual', ...(body ? { body } : {}) });
  for (const line of response.headers.getSetCookie()) {
    const [pair = '', ...attributes] = line.split(';');
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq).trim();
    const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=Thu, 01 Jan 1970/i.test(a));
    if (expired) jar.delete(name);
    else jar.set(name, pair.slice(eq + 1).trim());
  }
  await response.arrayBuffer();
  return response;
}
