import { UpstreamAuthError } from '../errors/appError.js';
import type { Provider } from '../providers/providerConfig.js';
import { checkUrl, UrlPolicyError } from '../security/urlPolicy.js';
import { strictFetch, type Fetch } from '../shared/httpClient.js';
import { isObject, memberAt } from '../providers/conformers/responseFields.js';
import type { ServerTokens } from './oauthClient.js';

/** What the broker learns about a connection when it is made (kept in `connections`, never a token). */
export interface UpstreamConnection {
  /** Who the user is at the provider; undefined where the broker cannot learn it (`identity: none`). */
  upstreamSubject: string | undefined;
  upstreamName: string | undefined;
  grantedScopes: string[];
  /** Connection facts: the conformer's extras and the metadata call's fields. */
  metadata: Record<string, string>;
  /** The connection's own API base, where the provider gives one per connection. */
  apiBase: string | undefined;
}

/** The most the broker reads of an identity or metadata answer. */
const MAX_ACCOUNT_RESPONSE_BYTES = 256 * 1024;
const MAX_VALUE = 256;
// API providers refuse requests without one (GitHub's REST API answers 403).
export const API_USER_AGENT = 'connect-broker';

/** The token-answer paths a provider entry reads, for its conformer to keep. */
export function tokenAnswerPaths(provider: Provider): string[] {
  const paths: string[] = [];
  if (provider.identity.from === 'tokenResponse')
    paths.push(provider.identity.subjectPath, ...(provider.identity.namePath ? [provider.identity.namePath] : []));
  if (provider.connectionApiBase) paths.push(provider.connectionApiBase.tokenResponsePath);
  return paths;
}

/**
 * Who the user is at the provider and what the connection holds, right
 * after the code exchange: the ID Token's `sub` (OpenID Connect Core §2), a
 * member of the token answer, or the provider's identity call made with the
 * new token; the granted scopes; the conformer's extras and the declared
 * metadata call's fields; the per-connection API base after the URL policy
 * and its allowed host suffixes. Any failure is UpstreamAuthError: a
 * connection whose account is unknown is not stored, unless the provider
 * declares none can be known (`identity: none`).
 */
export async function upstreamConnectionOf(
  provider: Provider,
  tokens: ServerTokens,
  deps: { fetch: Fetch; allowLoopback: boolean },
  asked: readonly string[] = provider.scopes,
): Promise<UpstreamConnection> {
  const refuse = (why: string, cause?: unknown): never => {
    throw new UpstreamAuthError(
      `${provider.displayName} connected, but ${why}. Nothing was stored; try connecting again.`,
      cause === undefined ? undefined : { cause },
    );
  };
  const getJson = async (
    url: string,
    method: 'GET' | 'POST',
    body: Readonly<Record<string, string>> | undefined,
    what: string,
  ): Promise<unknown> => {
    // The provider's API headers override the defaults (GitHub's Accept); Authorization is always the new token.
    const headers = new Headers({ accept: 'application/json', 'user-agent': API_USER_AGENT });
    for (const [name, value] of Object.entries(provider.apiHeaders)) headers.set(name, value);
    headers.set('authorization', `Bearer ${tokens.accessToken}`);
    if (body) headers.set('content-type', 'application/json');
    let response: Response;
    try {
      response = await strictFetch(deps.fetch, { maxBytes: MAX_ACCOUNT_RESPONSE_BYTES })(url, {
        method,
        headers,
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    } catch (cause) {
      return refuse(`its ${what} could not be read`, cause);
    }
    if (!response.ok) return refuse(`its ${what} answered HTTP ${response.status}`);
    try {
      return await response.json();
    } catch (cause) {
      return refuse(`its ${what} answered no JSON`, cause);
    }
  };

  let subject: string | undefined;
  let name: string | undefined;
  const identity = provider.identity;
  if (identity.from === 'none') {
    // An upstream MCP server: MCP defines no identity call, so the connection records no account.
  } else if (identity.from === 'idToken') {
    subject = tokens.idTokenSubject;
    const claims = tokens.idTokenClaims ?? {};
    name = scalar(claims['preferred_username']) ?? scalar(claims['email']) ?? scalar(claims['name']);
  } else if (identity.from === 'tokenResponse') {
    subject = tokens.extras[identity.subjectPath];
    name = identity.namePath === undefined ? undefined : tokens.extras[identity.namePath];
  } else {
    const answer = await getJson(identity.url, identity.method, identity.body, 'identity call');
    subject = isObject(answer) ? scalar(memberAt(answer, identity.subjectPath)) : undefined;
    name =
      identity.namePath !== undefined && isObject(answer) ? scalar(memberAt(answer, identity.namePath)) : undefined;
  }
  if (subject === undefined && identity.from !== 'none') return refuse('it did not say who you are there');

  const metadata: Record<string, string> = { ...tokens.extras };
  if (provider.metadataCall) {
    const answer = await getJson(provider.metadataCall.url, 'GET', undefined, 'connection details');
    for (const [field, path] of Object.entries(provider.metadataCall.fields)) {
      const value = scalar(memberAt(answer, path));
      if (value === undefined) return refuse(`its connection details lack ${path}`);
      metadata[field] = value;
    }
  }

  let apiBase: string | undefined;
  if (provider.connectionApiBase) {
    const { tokenResponsePath, allowedHostSuffixes } = provider.connectionApiBase;
    const raw = tokens.extras[tokenResponsePath];
    if (raw === undefined) return refuse(`it named no ${tokenResponsePath}`);
    try {
      const url = checkUrl(raw, { allowLoopback: deps.allowLoopback }, `${provider.id} ${tokenResponsePath}`);
      if (!allowedHostSuffixes.some((suffix) => url.hostname.endsWith(suffix)))
        return refuse(`its ${tokenResponsePath} is not on ${allowedHostSuffixes.join(' or ')}`);
      apiBase = url.href.replace(/\/$/, '');
    } catch (err) {
      if (err instanceof UrlPolicyError) return refuse(`its ${tokenResponsePath} is not a URL the broker calls`, err);
      throw err;
    }
  }

  // RFC 6749 §5.1: a token answer without `scope` granted what was asked for.
  const grantedScopes = tokens.scope === undefined ? [...asked] : tokens.scope.split(' ').filter((s) => s !== '');
  return { upstreamSubject: subject, upstreamName: name, grantedScopes, metadata, apiBase };
}

/** A string, a finite number or a boolean as text, bounded; anything else is absent. */
function scalar(value: unknown): string | undefined {
  const text =
    typeof value === 'number' && Number.isFinite(value)
      ? String(value)
      : typeof value === 'boolean'
        ? String(value)
        : value;
  const control = (ch: string) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f;
  return typeof text === 'string' && text !== '' && text.length <= MAX_VALUE && ![...text].some(control)
    ? text
    : undefined;
}
