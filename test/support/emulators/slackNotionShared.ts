import { createHash, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'vitest';
import type { Fetch } from '../../../src/shared/httpClient.js';
import type { TlsMaterial } from '../../../src/tls/localCa.js';
import type { BrokerStack } from '../brokerStack.js';
import { openConnectLink } from '../connectFlow.js';
import { listenHttps, type HttpsTestServer } from '../httpsTestServer.js';
import { createTestBrowser, type BrowserResponse, type TestBrowser } from '../testBrowser.js';

// What the Slack and Notion emulators and their tests share: reading a
// request the way a provider would, answering JSON, HTML and redirects, the
// one consent page both show, and the tests' reads of the broker's database.
// Nothing here is either provider's behaviour.

/** One request an emulator answered, as it arrived (the host is the real one the client asked for, from mapHosts). */
export interface SeenRequest {
  method: string;
  /** The provider host the caller asked for (x-forwarded-host, set by test/support/hostMap.ts). */
  host: string | undefined;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  contentType: string | undefined;
  body: string;
}

const MAX_BODY_BYTES = 64 * 1024;

/** The name the broker's OAuth client is registered under at both emulated providers. */
export const CLIENT_NAME = 'Connect Broker';

async function readRequest(req: IncomingMessage): Promise<SeenRequest> {
  const chunks: Buffer[] = [];
  let size = 0;
  // A request stream with no encoding set yields Buffers.
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error('request body too large for an emulator');
    chunks.push(chunk);
  }
  const url = new URL(req.url ?? '/', 'https://emulator.invalid');
  const forwarded = req.headers['x-forwarded-host'];
  return {
    method: req.method ?? 'GET',
    host: Array.isArray(forwarded) ? forwarded[0] : forwarded,
    path: url.pathname,
    query: url.searchParams,
    headers: req.headers,
    contentType: req.headers['content-type']?.split(';')[0]?.trim().toLowerCase(),
    body: Buffer.concat(chunks).toString('utf8'),
  };
}

export type Route = (seen: SeenRequest, res: ServerResponse) => void;

/**
 * An emulator of one provider host on the stack's TLS: each request read
 * whole and dispatched by "METHOD /path", `fallback` for the rest. A request
 * that did not ask for `host` (it did not come through the host map) is not
 * the provider's and gets 421 Misdirected Request (RFC 9110 §15.5.20).
 */
export async function serveEmulator(
  tls: TlsMaterial,
  host: string,
  routes: Readonly<Record<string, Route>>,
  fallback: Route,
): Promise<HttpsTestServer> {
  const server = await listenHttps(tls);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const seen = await readRequest(req);
    if (seen.host !== host) return void res.writeHead(421).end();
    (routes[`${seen.method} ${seen.path}`] ?? fallback)(seen, res);
  };
  server.setHandler((req, res) => {
    handle(req, res).catch(() => res.writeHead(500).end());
  });
  return server;
}

/** The body's parameters, form-encoded or a flat JSON object of strings; undefined when it is neither. */
export function bodyParams(seen: SeenRequest): Record<string, string> | undefined {
  if (seen.body === '') return {};
  if (seen.contentType === 'application/json') {
    try {
      const parsed: unknown = JSON.parse(seen.body);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
      return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
    } catch {
      return undefined;
    }
  }
  if (seen.contentType === 'application/x-www-form-urlencoded')
    return Object.fromEntries(new URLSearchParams(seen.body));
  return undefined;
}

/** RFC 6749 §2.3.1 / RFC 7617: HTTP Basic client credentials, each form-urlencoded before base64. */
export function basicCredentials(headers: IncomingHttpHeaders): { id: string; secret: string } | undefined {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(headers.authorization ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const unform = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
  return { id: unform(decoded.slice(0, colon)), secret: unform(decoded.slice(colon + 1)) };
}

/** RFC 6750 §2.1. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  return /^Bearer (\S+)$/i.exec(headers.authorization ?? '')?.[1];
}

/** RFC 7636 §4.2: the S256 challenge of a verifier. */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** A random opaque value with the provider's prefix and a canary marker, so a leak is easy to spot in any text. */
export function canaryValue(prefix: string): string {
  return `${prefix}canary${randomBytes(18).toString('hex')}`;
}

export function randomId(): string {
  return randomBytes(16).toString('hex');
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
    .end(JSON.stringify(body));
}

export function sendHtml(res: ServerResponse, status: number, html: string): void {
  res
    .writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
    .end(`<!doctype html><meta charset="utf-8">${html}`);
}

/** A 302 to `target` with `params` added to its query (RFC 6749 §4.1.2, §4.1.2.1). */
export function redirectWith(
  res: ServerResponse,
  target: string,
  params: Readonly<Record<string, string | undefined>>,
): void {
  const url = new URL(target);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  res.writeHead(302, { location: url.href, 'cache-control': 'no-store' }).end();
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/**
 * The consent page: who asks, for what, the account to approve as (a field:
 * the emulators have no passwords), Allow or Cancel. Its form posts to
 * `action`, a path on the provider's own host.
 */
export function consentPage(page: {
  provider: string;
  app: string;
  asks: readonly string[];
  action: string;
  requestId: string;
  problem?: string;
}): string {
  const asks = page.asks.map((ask) => `<li>${escapeHtml(ask)}</li>`).join('');
  return `<title>${escapeHtml(page.provider)}: allow ${escapeHtml(page.app)}?</title>
<h1>${escapeHtml(page.app)} is asking for access to your ${escapeHtml(page.provider)} account</h1>
${page.problem ? `<p role="alert">${escapeHtml(page.problem)}</p>` : ''}<ul>${asks}</ul>
<form method="post" action="${escapeHtml(page.action)}">
  <input type="hidden" name="request" value="${escapeHtml(page.requestId)}">
  <label>Account <input type="text" name="user" value=""></label>
  <button type="submit" name="decision" value="allow">Allow</button>
  <button type="submit" name="decision" value="deny">Cancel</button>
</form>`;
}

/** A provider's authorization request, held while its consent page is open. */
export interface PendingConsent {
  redirectUri: string;
  state: string | undefined;
}

/**
 * The consent form's answer, posted from the provider's own origin: Cancel
 * sends the user back with `error=access_denied` and the state (RFC 6749
 * §4.1.2.1, as both providers document); Allow, as a known account, with the
 * code `issue` makes. A request is answered once.
 */
export function answerConsent<P extends PendingConsent, U extends { login: string }>(
  seen: SeenRequest,
  res: ServerResponse,
  consent: {
    provider: string;
    host: string;
    action: string;
    pending: Map<string, P>;
    users: readonly U[];
    issue(request: P, user: U): string;
  },
): void {
  const form = bodyParams(seen) ?? {};
  const requestId = form['request'] ?? '';
  const request = consent.pending.get(requestId);
  if (!request || seen.headers.origin !== `https://${consent.host}`)
    return errorPage(res, consent.provider, 'invalid_request');
  if (form['decision'] !== 'allow') {
    consent.pending.delete(requestId);
    return redirectWith(res, request.redirectUri, { error: 'access_denied', state: request.state });
  }
  const user = consent.users.find((u) => u.login === form['user']);
  if (!user)
    return sendHtml(
      res,
      200,
      consentPage({
        provider: consent.provider,
        app: CLIENT_NAME,
        asks: [],
        action: consent.action,
        requestId,
        problem: 'No such account.',
      }),
    );
  consent.pending.delete(requestId);
  redirectWith(res, request.redirectUri, { code: consent.issue(request, user), state: request.state });
}

/** The page a provider shows instead of redirecting when the request names no client or redirect URI it may trust (RFC 6749 §4.1.2.1). */
export function errorPage(res: ServerResponse, provider: string, code: string): void {
  sendHtml(
    res,
    400,
    `<title>${escapeHtml(provider)}: error</title><h1>Something went wrong</h1><p>${escapeHtml(code)}</p>`,
  );
}

// ---------------------------------------------------------------- the tests' side

/** What an emulated provider's end-to-end test reads and drives, once the stack runs. */
export interface EmulatedFlow {
  query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  /** The flow whose purpose contains `purpose`. */
  flowOf(purpose: string): Promise<{ id: string; status: string }>;
  /** The kinds of `sub`'s stored secrets for the provider. */
  secretsOf(sub: string): Promise<string[]>;
  /** Keeps a page or answer's text for the leak check; returns it. */
  keep<T extends { text: string }>(page: T): T;
  /** From the connect link to the provider's consent page: signs in at the broker, consents, follows the redirect to the provider's host. */
  toConsent(
    url: string,
    login: string,
    stopAt?: (u: URL) => boolean,
  ): Promise<{ browser: TestBrowser; review: BrowserResponse; page: BrowserResponse }>;
  /** The `connection_forgotten` events on the flow whose callback stored the tokens. */
  forgottenOn(navigationId: string): Promise<Record<string, unknown>[]>;
  /** No value of `secrets` in any text kept, nor in any log line of the stack. */
  expectNoneShown(secrets: readonly string[]): void;
}

export function emulatedFlow(stack: BrokerStack, provider: string, browserFetch: Fetch): EmulatedFlow {
  const seen: string[] = [];
  const query = async (sql: string, params: unknown[] = []) =>
    (await stack.db.pool.query<Record<string, unknown>>(sql, params)).rows;
  const keep = <T extends { text: string }>(page: T): T => {
    seen.push(page.text);
    return page;
  };
  return {
    query,
    keep,
    flowOf: async (purpose) =>
      (await query('SELECT id, status FROM elicitation_navigations WHERE purpose LIKE $1', [`%${purpose}%`]))[0] as {
        id: string;
        status: string;
      },
    secretsOf: async (sub) =>
      (
        await query('SELECT kind FROM secrets WHERE subject_sub = $1 AND provider = $2 ORDER BY kind', [sub, provider])
      ).map((r) => r['kind'] as string),
    async toConsent(url, login, stopAt) {
      const browser = createTestBrowser({ fetch: browserFetch, ...(stopAt ? { stopAt } : {}) });
      const { review } = await openConnectLink(stack, url, login, browser);
      keep(review);
      return { browser, review, page: keep(await browser.submitForm(review, {}, { form: '/connect/' })) };
    },
    forgottenOn: (navigationId) =>
      query(
        "SELECT actor, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_forgotten'",
        [navigationId],
      ),
    expectNoneShown(secrets) {
      for (const text of [...seen, ...stack.logs]) {
        for (const secret of secrets) expect(text.includes(secret), `a ${provider} secret was shown`).toBe(false);
      }
    },
  };
}
