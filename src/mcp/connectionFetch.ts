import { AppError, UnavailableError } from '../errors/appError.js';
import { UpstreamUnauthorizedError } from '../broker/forgetConnection.js';
import { memberAt } from '../providers/conformers/responseFields.js';
import { API_USER_AGENT } from '../oauth/upstreamAccount.js';
import type { Fetch } from '../shared/httpClient.js';
import { tracedFetch } from '../telemetry/tracedFetch.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What a connection tool knows about the connection it acts through (never the token). */
export interface ConnectionInfo {
  provider: string;
  displayName: string;
  /** The connection's API base (the provider's, or the one this connection was given); every request of the tool goes below it. */
  apiBase: string;
  /** The scopes the tool declared it needs. */
  scopes: readonly string[];
  /** Headers the provider's API wants on every call (API version pins), sent before the tool's own. */
  apiHeaders: Readonly<Record<string, string>>;
  /** The user's account at the provider, as recorded when they connected (undefined for older connections). */
  account: { subject: string | undefined; name: string | undefined };
  /** What the provider granted, and the connection facts it returned (Slack `team.id`, Atlassian `cloudId`). */
  grantedScopes: readonly string[];
  metadata: Readonly<Record<string, string>>;
  /** An answer besides HTTP 401 that means the token is dead (the provider entry's `deadTokenAnswer`). */
  deadTokenAnswer?: { errorPath: string; values: readonly string[] } | undefined;
}

export interface ConnectionRequestInit {
  method?: string;
  /** Plain header values; Authorization, Host and Cookie are the broker's, not the tool's. */
  headers?: Readonly<Record<string, string>>;
  body?: string;
}

/** A fetch bound to one connection: a path below the API base in, the provider's answer out. */
export type ConnectionFetch = (path: string, init?: ConnectionRequestInit) => Promise<Response>;

/** A tool asked for a request the bound fetch does not make (a bug in the tool, never the user's input alone). */
export class ConnectionFetchRefusedError extends AppError {
  constructor(message: string) {
    super('internal', message);
  }
}

const RESERVED_HEADERS = new Set(['authorization', 'proxy-authorization', 'host', 'cookie']);
// Percent-encoded '.', '/', '\' and controls: the WHATWG URL parser reads %2e%2e as '..', and a
// server may decode the others into a different path than the one checked here.
const ENCODED_TRICKS = /%(2e|2f|5c|0[0-9a-f]|1[0-9a-f]|7f)/i;
const hasControl = (text: string): boolean =>
  [...text].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f);

/**
 * The fetch a connection tool gets: the URL is the API base plus a path that
 * starts with one '/', so no absolute URL, scheme-relative `//host`, userinfo
 * or dot segment can take it to another host or above the base (RFC 3986
 * §3.2, §5.2.4); the user's token goes in Authorization only (RFC 6750 §2.1);
 * redirects are not followed (they could lead elsewhere); a 401 is the
 * provider refusing the stored token (UpstreamUnauthorizedError).
 */
export function connectionFetch(fetch: Fetch, connection: ConnectionInfo, accessToken: string): ConnectionFetch {
  // A span per API call records the connection's API base, not the tool's path: that is built from
  // the call's arguments, which never go into a span.
  const apiBase = URL.canParse(connection.apiBase) ? new URL(connection.apiBase) : undefined;
  const traced = tracedFetch(fetch, {
    name: (_url, init) => `provider.api ${(init?.method ?? 'GET').toUpperCase()}`,
    recorded: () => (apiBase ? `${apiBase.origin}${apiBase.pathname}` : ''),
    attributes: { 'broker.provider': connection.provider },
  });
  return async (path, init = {}) => {
    const url = requestUrl(connection, path);
    // APIs refuse calls without a User-Agent (GitHub); the provider's pinned headers come next, the tool's may override them.
    const headers = new Headers({ 'user-agent': API_USER_AGENT, ...connection.apiHeaders });
    for (const [name, value] of Object.entries(init.headers ?? {})) {
      if (RESERVED_HEADERS.has(name.toLowerCase()))
        throw new ConnectionFetchRefusedError(`a connection tool may not set the ${name} header`);
      if (hasControl(name) || hasControl(value))
        throw new ConnectionFetchRefusedError(
          `header ${JSON.stringify(name.slice(0, 40))} contains a control character (CR/LF)`,
        );
      headers.set(name, value);
    }
    headers.set('authorization', `Bearer ${accessToken}`);
    let response: Response;
    try {
      response = await traced(url, {
        method: init.method ?? 'GET',
        headers,
        redirect: 'manual',
        ...(init.body === undefined ? {} : { body: init.body }),
      });
    } catch (cause) {
      // No answer (refused, reset, timed out): a request that may change something may have been
      // carried out all the same, so only a safe one is said to be worth repeating (RFC 9110 §9.2.1).
      const method = (init.method ?? 'GET').toUpperCase();
      throw new UnavailableError(
        SAFE_METHODS.has(method)
          ? `${connection.displayName} could not be reached. Try again.`
          : `${connection.displayName} did not answer. Whether the request was carried out is unknown: check at ${connection.displayName} before trying again.`,
        { cause, expose: true },
      );
    }
    if (response.status === 401) {
      await response.body?.cancel().catch(() => undefined);
      // The token is dead (revoked, or its grant withdrawn): the caller forgets it and asks the user to connect again.
      throw new UpstreamUnauthorizedError(`${connection.displayName} refused the stored connection.`);
    }
    if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400)) {
      await response.body?.cancel().catch(() => undefined);
      throw new UnavailableError(
        `${connection.displayName} answered a redirect (HTTP ${response.status}), which is not followed.`,
        { expose: true },
      );
    }
    return connection.deadTokenAnswer ? refuseDeadToken(connection, connection.deadTokenAnswer, response) : response;
  };
}

/** The answer, read and handed on unchanged, unless it is the provider's way of saying the token is dead. */
async function refuseDeadToken(
  connection: ConnectionInfo,
  rule: NonNullable<ConnectionInfo['deadTokenAnswer']>,
  response: Response,
): Promise<Response> {
  if (!(response.headers.get('content-type') ?? '').toLowerCase().includes('json')) return response;
  const text = await response.text();
  let error: unknown;
  try {
    error = memberAt(JSON.parse(text), rule.errorPath);
  } catch {
    // not JSON after all: the tool reads it as it is
  }
  if (typeof error === 'string' && rule.values.includes(error)) {
    throw new UpstreamUnauthorizedError(`${connection.displayName} refused the stored connection (${error}).`);
  }
  return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** The absolute URL for `path` below the connection's API base; throws ConnectionFetchRefusedError otherwise. */
export function requestUrl(connection: Pick<ConnectionInfo, 'provider' | 'apiBase'>, path: string): URL {
  const refuse = (why: string): never => {
    throw new ConnectionFetchRefusedError(
      `${connection.provider}: the path ${JSON.stringify(path.slice(0, 80))} ${why}`,
    );
  };
  if (!URL.canParse(connection.apiBase))
    throw new UnavailableError(`${connection.provider} has no API base configured.`, { expose: true });
  const base = new URL(connection.apiBase);
  if (hasControl(path)) refuse('contains a control character (CR/LF)');
  if (!path.startsWith('/') || path.startsWith('//'))
    refuse('must start with a single "/" (it is relative to the API base)');
  if (path.includes('\\') || path.includes('#')) refuse('must not contain "\\" or "#"');
  if (ENCODED_TRICKS.test(path)) refuse('must not percent-encode ".", "/", "\\" or control characters');
  const [pathname = '', ...query] = path.split('?');
  if (pathname.split('/').some((segment) => segment === '.' || segment === '..'))
    refuse('must not contain "." or ".." segments');
  const basePath = base.pathname.replace(/\/+$/, '');
  const url = new URL(`${base.origin}${basePath}${pathname}${query.length > 0 ? `?${query.join('?')}` : ''}`);
  // Belt and braces: whatever the parser made of it, it is the base's origin, below the base's path.
  if (url.origin !== base.origin || url.username || url.password || !`${url.pathname}/`.startsWith(`${basePath}/`))
    refuse(`does not stay below ${base.origin}${basePath}`);
  return url;
}
