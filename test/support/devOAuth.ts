import { createHash, randomBytes } from 'node:crypto';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import type { BrowserResponse, TestBrowser } from './testBrowser.js';

export interface TestClient {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function createPkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The authorization endpoint URL of an oidc-provider issuer (route `/auth`). */
export function authorizationUrl(issuer: string, params: Record<string, string>): string {
  return `${issuer}/auth?${new URLSearchParams(params).toString()}`;
}

/**
 * A code + PKCE (S256) authorization URL for `server`'s test client; an
 * override of `undefined` removes that parameter.
 */
export function codeRequestUrl(
  server: { issuer: string; client: TestClient },
  overrides: Record<string, string | undefined> = {},
): string {
  const params: Record<string, string | undefined> = {
    client_id: server.client.clientId,
    response_type: 'code',
    redirect_uri: server.client.redirectUri,
    scope: 'openid profile',
    state: 'state-1',
    code_challenge: createPkce().challenge,
    code_challenge_method: 'S256',
    ...overrides,
  };
  const defined = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined);
  return authorizationUrl(server.issuer, Object.fromEntries(defined));
}

/** Stops the test browser at the test clients' redirect URIs (nothing listens there). */
export const atTestCallback = (url: URL): boolean => url.origin === 'https://127.0.0.1:9';

export interface AuthorizeRequest {
  issuer: string;
  client: TestClient;
  scope: string;
  resource?: string;
  login: string;
  /** Press Allow on a consent page if one is shown. */
  allowConsent?: boolean;
}

export interface AuthorizeResult {
  code: string;
  pkce: Pkce;
  /** The redirect to the client, not fetched. */
  callback: URL;
}

/** Runs the browser part of a code flow with PKCE: authorize, sign in, consent. */
export async function authorizeCode(browser: TestBrowser, request: AuthorizeRequest): Promise<AuthorizeResult> {
  const pkce = createPkce();
  const state = randomBytes(16).toString('base64url');
  const stopAt = (url: URL) => url.href.startsWith(request.client.redirectUri);
  const params = {
    client_id: request.client.clientId,
    response_type: 'code',
    redirect_uri: request.client.redirectUri,
    scope: request.scope,
    state,
    code_challenge: pkce.challenge,
    code_challenge_method: 'S256',
    ...(request.resource ? { resource: request.resource } : {}),
  };
  let page: BrowserResponse = await browser.get(authorizationUrl(request.issuer, params), { stopAt });
  if (page.location === undefined) {
    page = await browser.submitForm(page, { login: request.login, password: DEV_PASSWORD }, { stopAt });
  }
  if (page.location === undefined && request.allowConsent) {
    page = await browser.submitForm(page, {}, { form: 'Allow', stopAt });
  }
  if (page.location === undefined) throw new Error(`the flow stopped on ${page.url} (${page.status})`);
  const callback = new URL(page.location);
  const code = callback.searchParams.get('code');
  if (!code || callback.searchParams.get('state') !== state) throw new Error(`no code in ${callback.href}`);
  return { code, pkce, callback };
}

export interface TokenResponse {
  status: number;
  body: Record<string, unknown>;
}

/** POSTs to the token endpoint (route `/token`) with client_secret_basic. */
export async function tokenRequest(
  fetch: Fetch,
  issuer: string,
  client: TestClient,
  params: Record<string, string>,
): Promise<TokenResponse> {
  const basic = Buffer.from(
    `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
  ).toString('base64');
  const response = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params).toString(),
  });
  // The token endpoint answers a JSON object, success or error (RFC 6749 §5).
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

export function exchangeCode(fetch: Fetch, issuer: string, client: TestClient, result: AuthorizeResult) {
  return tokenRequest(fetch, issuer, client, {
    grant_type: 'authorization_code',
    code: result.code,
    redirect_uri: client.redirectUri,
    code_verifier: result.pkce.verifier,
  });
}
