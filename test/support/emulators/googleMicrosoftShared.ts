import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type JSONWebKeySet, type JWTPayload } from 'jose';
import { expect } from 'vitest';
import type { Fetch } from '../../../src/shared/httpClient.js';
import { digestOf } from '../../../src/shared/tokens.js';
import type { TlsMaterial } from '../../../src/tls/localCa.js';
import type { BrokerStack } from '../brokerStack.js';
import { elicitConnection, openConnectLink, retryConnection, type Elicited } from '../connectFlow.js';
import { mapHosts } from '../hostMap.js';
import { listenHttps } from '../httpsTestServer.js';
import { tokenFor, type WireResponse } from '../mcpWire.js';
import { createTestBrowser, type BrowserResponse, type TestBrowser } from '../testBrowser.js';

// Plumbing the Google and Microsoft emulators share: a server that answers
// for several real hosts (mapHosts says which in x-forwarded-host), what a
// request carried, the grant bookkeeping both keep, RS256 signing and one
// consent page; and, for their tests, the user's browser trip through the
// broker to the provider and back. None of it is either provider's
// behaviour; that lives in google.ts and microsoft.ts. One file past 300
// lines: both halves serve exactly these two emulators and their tests, and
// the other emulators of this folder keep their own shared file.

/** One request an emulator answered, as the provider would have seen it. */
export interface Seen {
  method: string;
  /** The real host the caller asked for (test/support/hostMap.ts), or the emulator's own. */
  host: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** A form-encoded body's parameters (empty for any other body). */
  form: URLSearchParams;
}

export type Answer = (seen: Seen, res: ServerResponse) => void | Promise<void>;

/** What a test reaches on every emulator. */
export interface Emulator {
  origin: string;
  /** The provider's real hosts it answers for (test/support/hostMap.ts maps them to `origin`). */
  hosts: readonly string[];
  /** Every request, in order. */
  seen: Seen[];
  /** Handler failures (a bug in the emulator, never the broker's doing): a test expects none. */
  failures: string[];
  grants: GrantBook;
  /** The keys its ID tokens are signed with. */
  jwks: JSONWebKeySet;
  /** Revokes the user's access tokens (their consent stays: a reconnect is a second consent). */
  revokeAccessTokens(user: string): void;
  /** Every token issued and the client secret: none may appear in anything the broker shows or logs. */
  secrets(): string[];
  close(): Promise<void>;
}

/** An HTTPS server on the stack's TLS for `hosts`; `answer` gets each request parsed, and a throw becomes a 500. */
export async function startEmulator(
  tls: TlsMaterial,
  parts: { hosts: readonly string[]; grants: GrantBook; signer: JwtSigner; clientSecret: string },
  answer: Answer,
): Promise<Emulator> {
  const server = await listenHttps(tls);
  const seen: Seen[] = [];
  const failures: string[] = [];
  server.setHandler((req, res) => {
    void (async () => {
      try {
        const request = await parse(req);
        seen.push(request);
        await answer(request, res);
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
        if (!res.headersSent) res.writeHead(500).end();
      }
    })();
  });
  const { hosts, grants, signer, clientSecret } = parts;
  return {
    origin: server.origin,
    hosts,
    seen,
    failures,
    grants,
    jwks: signer.jwks,
    revokeAccessTokens: (user) => grants.revokeAccessTokens(user),
    secrets: () => [clientSecret, ...grants.issued.map((t) => t.value)],
    close: () => server.close(),
  };
}

async function parse(req: IncomingMessage): Promise<Seen> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const url = new URL(req.url ?? '/', 'https://emulator.invalid');
  const forwarded = req.headers['x-forwarded-host'];
  const formEncoded =
    req.headers['content-type']?.split(';')[0]?.trim().toLowerCase() === 'application/x-www-form-urlencoded';
  return {
    method: req.method ?? 'GET',
    host: (Array.isArray(forwarded) ? forwarded[0] : forwarded) ?? req.headers.host ?? '',
    path: url.pathname,
    query: url.searchParams,
    headers: req.headers,
    form: new URLSearchParams(formEncoded ? Buffer.concat(chunks).toString('utf8') : ''),
  };
}

/** The map test/support/hostMap.ts takes: each real host to the emulator's origin. */
export function hostMapOf(emulator: Pick<Emulator, 'origin' | 'hosts'>): Record<string, string> {
  return Object.fromEntries(emulator.hosts.map((host) => [host, emulator.origin]));
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers })
    .end(JSON.stringify(body));
}

export function html(res: ServerResponse, status: number, body: string): void {
  res
    .writeHead(status, { 'content-type': 'text/html; charset=utf-8' })
    .end(`<!doctype html><meta charset="utf-8">${body}`);
}

/** A 302 back to the client with the response parameters in the query (RFC 6749 §4.1.2, §4.1.2.1). */
export function redirectBack(
  res: ServerResponse,
  redirectUri: string,
  params: Record<string, string | undefined>,
): void {
  const target = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) target.searchParams.set(name, value);
  res.writeHead(302, { location: target.href }).end();
}

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (ch) => escapes[ch]!);

/** The client credentials of a token request: HTTP Basic or the body (RFC 6749 §2.3.1); `both` is a protocol error. */
export function clientCredentials(seen: Seen): {
  method: 'client_secret_basic' | 'client_secret_post' | 'none' | 'both';
  id: string | undefined;
  secret: string | undefined;
} {
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(seen.headers.authorization ?? '')?.[1];
  const inBody = seen.form.get('client_secret') ?? undefined;
  if (basic !== undefined && inBody !== undefined) return { method: 'both', id: undefined, secret: undefined };
  if (basic !== undefined) {
    const pair = Buffer.from(basic, 'base64').toString('utf8');
    const unform = (part: string) => decodeURIComponent(part.replace(/\+/g, ' '));
    return {
      method: 'client_secret_basic',
      id: unform(pair.slice(0, pair.indexOf(':'))),
      secret: unform(pair.slice(pair.indexOf(':') + 1)),
    };
  }
  return {
    method: inBody === undefined ? 'none' : 'client_secret_post',
    id: seen.form.get('client_id') ?? undefined,
    secret: inBody,
  };
}

export function bearerOf(seen: Seen): string | undefined {
  return /^Bearer (\S+)$/.exec(seen.headers.authorization ?? '')?.[1];
}

/** RFC 7636 §4.6. */
export function verifierMatches(
  verifier: string | null,
  challenge: string | undefined,
  method: string | undefined,
): boolean {
  if (challenge === undefined) return verifier === null;
  if (verifier === null) return false;
  return (method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier) === challenge;
}

/** An opaque token in the provider's style with a canary marker, so a leak stands out in any text. */
export const canary = (prefix: string): string => `${prefix}canary-${randomBytes(20).toString('base64url')}`;

/** One authorization request the user is looking at, or one issued code: what its token request must match. */
export interface PendingGrant {
  clientId: string;
  redirectUri: string;
  scopes: string[];
  state: string | undefined;
  nonce: string | undefined;
  challenge: string | undefined;
  challengeMethod: string | undefined;
  /** Provider-specific facts of the request (Google's access_type and prompt, Entra's tenant). */
  extra: Record<string, string>;
}

/** A token the emulator issued: to whom, with what; `revoked` once the emulator was told to revoke it. */
export interface Issued {
  kind: 'access_token' | 'refresh_token' | 'id_token';
  value: string;
  user: string;
  clientId: string;
  scopes: string[];
  expiresAt: number;
  revoked: boolean;
}

/** The emulator's grant state: pending requests by id, codes (single use), and every token issued. */
export class GrantBook {
  readonly requests = new Map<string, PendingGrant>();
  readonly codes = new Map<string, PendingGrant & { user: string; expiresAt: number }>();
  readonly issued: Issued[] = [];
  /** `expires_in` of the access tokens issued from now on (about an hour at both providers). */
  accessTokenLifetimeSeconds = 3599;

  remember(request: PendingGrant): string {
    const id = randomUUID();
    this.requests.set(id, request);
    return id;
  }

  issue(entry: Omit<Issued, 'revoked'>): string {
    this.issued.push({ ...entry, revoked: false });
    return entry.value;
  }

  /** The live token of `kind` with this value, if any. */
  live(kind: Issued['kind'], value: string | undefined, now = Date.now()): Issued | undefined {
    return this.issued.find((t) => t.kind === kind && t.value === value && !t.revoked && t.expiresAt > now);
  }

  /** The values issued to `user`, oldest first. */
  valuesOf(user: string, kind: Issued['kind']): string[] {
    return this.issued.filter((t) => t.user === user && t.kind === kind).map((t) => t.value);
  }

  /** Revokes every access token of `user`: the next API call with one is refused. */
  revokeAccessTokens(user: string): void {
    for (const token of this.issued) if (token.user === user && token.kind === 'access_token') token.revoked = true;
  }
}

/** An RS256 key, its JWKS and a signer, for providers whose ID tokens are signed JWTs. */
export interface JwtSigner {
  jwks: JSONWebKeySet;
  sign(claims: JWTPayload): Promise<string>;
}

export async function createJwtSigner(): Promise<JwtSigner> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomBytes(8).toString('hex');
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return {
    jwks: { keys: [jwk] },
    sign: (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(privateKey),
  };
}

/**
 * The consent page: the scopes a user may untick (Google's granular
 * consent) as checkboxes `grant_<n>`, the rest listed; the account to
 * approve as in a field (the emulators keep no passwords); Allow or Deny.
 * It posts to `action`, a path on the provider's own host.
 */
export function consentPage(page: {
  brand: string;
  app: string;
  action: string;
  requestId: string;
  listed: readonly string[];
  choosable: readonly string[];
  problem?: string;
}): string {
  const listed = page.listed.map((scope) => `<li>${escapeHtml(scope)}</li>`).join('');
  const choosable = page.choosable
    .map(
      (scope, n) =>
        `<li><label><input type="checkbox" name="grant_${n}" value="${escapeHtml(scope)}" checked> ${escapeHtml(scope)}</label></li>`,
    )
    .join('');
  return `<title>${escapeHtml(page.brand)}</title>
<h1>${escapeHtml(page.app)} wants to access your ${escapeHtml(page.brand)} account</h1>
${page.problem ? `<p role="alert">${escapeHtml(page.problem)}</p>` : ''}<ul>${listed}</ul>
<form method="post" action="${escapeHtml(page.action)}">
  <input type="hidden" name="request" value="${escapeHtml(page.requestId)}">
  <label>Account <input type="text" name="login" value=""></label>
  <ul>${choosable}</ul>
  <button type="submit" name="decision" value="allow">Allow</button>
  <button type="submit" name="decision" value="deny">Deny</button>
</form>`;
}

/** The ticked `grant_<n>` boxes of a consent form, limited to what was offered. */
export function ticked(form: URLSearchParams, offered: readonly string[]): string[] {
  return offered.filter((scope, n) => form.get(`grant_${n}`) === scope);
}

/** A test browser whose visits to the provider's real hosts land on the emulator; every answer it got is kept (status line, headers, body) for leak checks. */
export function providerBrowser(
  stack: BrokerStack,
  emulator: Pick<Emulator, 'origin' | 'hosts'>,
): { browser: TestBrowser; received: string[] } {
  const received: string[] = [];
  const mapped = mapHosts(stack.fetch, hostMapOf(emulator));
  const recording = (async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    const response = await mapped(input, init);
    received.push(`${response.status} ${JSON.stringify([...response.headers])}\n${await response.clone().text()}`);
    return response;
  }) as Fetch;
  return { browser: createTestBrowser({ fetch: recording }), received };
}

export interface ProviderTrip {
  /** The provider's authorization request, as the browser was sent to it. */
  authorizeUrl: URL;
  /** The page the trip ended on (the broker's done page, or its refusal). */
  done: BrowserResponse;
}

/** How the user answers the provider's consent page: Allow (default) or Deny, and fields to change (`grant_<n>: ''` unticks a scope). */
export interface ConsentAnswer {
  decision?: 'Allow' | 'Deny';
  values?: Record<string, string>;
}

/**
 * The user's side of a connection: opens the connect link as `login`
 * (signing in to the broker), consents there, lands on the provider's
 * consent page and answers it as `account` (`values` may untick scopes).
 */
export async function connectAtProvider(
  stack: BrokerStack,
  browser: TestBrowser,
  connectUrl: string,
  who: { login: string; account: string },
  answer: ConsentAnswer = {},
): Promise<ProviderTrip> {
  const { review } = await openConnectLink(stack, connectUrl, who.login, browser);
  const consent = await browser.submitForm(review, {}, { form: '/connect/' });
  const done = await browser.submitForm(
    consent,
    { login: who.account, ...answer.values },
    { button: answer.decision ?? 'Allow' },
  );
  return { authorizeUrl: new URL(consent.url), done };
}

export interface ConnectRun {
  /** The MCP access token the host calls with. */
  mcp: string;
  elicited: Elicited;
  trip: ProviderTrip;
  flowId: string;
  /** The flow's status right after the provider sent the browser back to the broker. */
  statusAfterCallback: string | undefined;
  /** The host's retry (`accept`), unless `retry` was false. */
  retried: WireResponse | undefined;
}

/**
 * A whole connection from the host's side: `login` calls `tool` while not
 * connected, follows the URL elicitation through the provider as `account`,
 * and the host retries with the elicitation's requestState. Every page and
 * MCP answer is added to `received`.
 */
export async function connectThroughProvider(
  stack: BrokerStack,
  emulator: Emulator,
  run: { login: string; account: string; tool: string; answer?: ConsentAnswer; retry?: boolean },
  received: string[],
): Promise<ConnectRun> {
  const mcp = await tokenFor(stack, run.login);
  const elicited = await elicitConnection(stack, mcp, run.tool, {});
  const { browser, received: pages } = providerBrowser(stack, emulator);
  const trip = await connectAtProvider(
    stack,
    browser,
    elicited.url,
    { login: run.login, account: run.account },
    run.answer,
  );
  received.push(...pages);
  const flowId = await flowIdOf(stack, elicited.url);
  const { rows } = await stack.db.pool.query<{ status: string }>(
    'SELECT status FROM elicitation_navigations WHERE id = $1',
    [flowId],
  );
  const retried =
    run.retry === false ? undefined : await retryConnection(stack, mcp, run.tool, {}, elicited.requestState, 'accept');
  if (retried) received.push(retried.text);
  return { mcp, elicited, trip, flowId, statusAfterCallback: rows[0]?.status, retried };
}

/** The id of the flow behind a connect link. */
export async function flowIdOf(stack: BrokerStack, connectUrl: string): Promise<string> {
  const handle = new URL(connectUrl).pathname.split('/').pop() ?? '';
  const { rows } = await stack.db.pool.query<{ id: string }>(
    'SELECT id FROM elicitation_navigations WHERE handle_digest = $1',
    [digestOf(handle)],
  );
  if (!rows[0]) throw new Error(`no flow for ${connectUrl}`);
  return rows[0].id;
}

/** None of `secrets` appears in any of `texts` or in any line the broker logged. */
export function expectNoSecretIn(stack: BrokerStack, secrets: readonly string[], texts: readonly string[]): void {
  const leaked = [...texts, ...stack.logs].filter((text) => secrets.some((secret) => text.includes(secret)));
  expect(leaked.length, 'a token or client secret appears in an answer, a page or a log line').toBe(0);
}
