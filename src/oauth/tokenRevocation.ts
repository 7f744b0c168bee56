import type { Provider } from '../providers/providerConfig.js';
import { checkUrl, UrlPolicyError } from '../security/urlPolicy.js';
import { strictFetch, type Fetch } from '../shared/httpClient.js';
import { MAX_AUTH_RESPONSE_BYTES, type OAuthServer } from './oauthClient.js';
import { failureReason } from './oauthErrors.js';
import { API_USER_AGENT } from './upstreamAccount.js';

/** The tokens the broker holds for a connection, opened; either may be missing. */
export interface HeldTokens {
  accessToken: string | undefined;
  refreshToken: string | undefined;
}

/** What the provider made of a revocation: `reason` is a few fixed words (an error code, a status), never a token. */
export type Revocation =
  | { outcome: 'revoked'; token: 'access_token' | 'refresh_token' }
  | { outcome: 'not_supported' }
  | { outcome: 'failed'; reason: string };

const NOTHING_HELD: Revocation = { outcome: 'failed', reason: 'no token is held to revoke' };

/**
 * Revokes a connection's grant at its provider, in one request, never throwing: the provider's own
 * call where its entry names one (`revocationCall`, GitHub), else RFC 7009 at the revocation
 * endpoint its metadata or entry names: the refresh token when one is held (§2.1: the server
 * SHOULD then invalidate the access tokens of the same grant too), else the access token.
 * `not_supported` where the provider has neither.
 */
export async function revokeAtProvider(
  provider: Provider,
  tokens: HeldTokens,
  options: { fetch: Fetch; allowLoopback: boolean; server: () => Promise<OAuthServer> },
): Promise<Revocation> {
  if (provider.revocationCall) return revokeByCall(provider, provider.revocationCall, tokens.accessToken, options);
  const discovered = provider.kind === 'oidc' || provider.metadataDiscovery;
  if (!discovered && provider.revocationEndpoint === undefined) return { outcome: 'not_supported' };
  let server: OAuthServer;
  try {
    server = await options.server();
  } catch (err) {
    return { outcome: 'failed', reason: failureReason(err) };
  }
  const endpoint = server.metadata().revocationEndpoint;
  if (endpoint === undefined) return { outcome: 'not_supported' };
  try {
    // A discovered endpoint stays on the host the entry names, or the issuer's.
    const configured = provider.revocationEndpoint ?? provider.issuer ?? '';
    checkUrl(endpoint, { allowLoopback: options.allowLoopback, expectedHost: new URL(configured).host });
  } catch (err) {
    if (!(err instanceof UrlPolicyError)) throw err;
    return { outcome: 'failed', reason: 'its revocation endpoint is refused by the URL policy' };
  }
  const kind = tokens.refreshToken !== undefined ? 'refresh_token' : 'access_token';
  const token = tokens.refreshToken ?? tokens.accessToken;
  if (token === undefined) return NOTHING_HELD;
  const answer = await server.revoke(token, kind);
  return answer.revoked ? { outcome: 'revoked', token: kind } : { outcome: 'failed', reason: answer.reason };
}

async function revokeByCall(
  provider: Provider,
  call: NonNullable<Provider['revocationCall']>,
  accessToken: string | undefined,
  options: { fetch: Fetch },
): Promise<Revocation> {
  if (accessToken === undefined) return NOTHING_HELD;
  const credentials = Buffer.from(`${provider.clientId}:${provider.clientSecret.reveal()}`).toString('base64');
  try {
    const response = await strictFetch(options.fetch, { maxBytes: MAX_AUTH_RESPONSE_BYTES })(call.url, {
      method: call.method,
      headers: {
        accept: 'application/json',
        ...provider.apiHeaders,
        'user-agent': API_USER_AGENT,
        'content-type': 'application/json',
        authorization: `Basic ${credentials}`,
      },
      body: JSON.stringify({ [call.tokenMember]: accessToken }),
    });
    // The answer's body is not read: it is the provider's words, and they may quote the token.
    if (response.ok) return { outcome: 'revoked', token: 'access_token' };
    return { outcome: 'failed', reason: `refused (HTTP ${response.status})` };
  } catch (err) {
    return { outcome: 'failed', reason: failureReason(err) };
  }
}
