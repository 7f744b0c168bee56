import { createRemoteJWKSet, customFetch as joseCustomFetch, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { UpstreamAuthError } from '../errors/appError.js';
import type { Provider } from '../providers/providerConfig.js';
import { ACCESS_TOKEN_ALGORITHMS, ACCESS_TOKEN_REQUIRED_CLAIMS } from '../security/accessTokenPolicy.js';
import { checkUrl } from '../security/urlPolicy.js';
import { strictFetch, type Fetch } from '../shared/httpClient.js';
import { discoverServer, MAX_AUTH_RESPONSE_BYTES, type AuthorizationChecks, type OAuthServer, type ServerTokens } from './oauthClient.js';

export interface ProviderAuthorization extends AuthorizationChecks {
  url: URL;
}

export interface ProviderTokens {
  accessToken: string;
  refreshToken: string | undefined;
  expiresAt: Date | undefined;
  /** The user's subject at the provider, from its ID Token. */
  upstreamSubject: string | undefined;
}

export interface ProviderClient {
  provider: Provider;
  /** scheme://host of the authorization endpoint: what the user is shown before being sent there. */
  destination(): Promise<{ scheme: string; host: string }>;
  beginAuthorization(redirectUri: string): Promise<ProviderAuthorization>;
  completeAuthorization(currentUrl: URL, redirectUri: string, checks: AuthorizationChecks): Promise<ProviderTokens>;
  refresh(refreshToken: string): Promise<ProviderTokens>;
}

/**
 * The broker as an OAuth client of one provider: authorization code with
 * PKCE S256, state, nonce and a resource indicator; every discovered endpoint
 * must pass the URL policy on the issuer's exact host; every access token
 * must be a JWT for the provider's configured audience, with a pinned
 * algorithm and an expiry.
 */
export function createProviderClient(provider: Provider, options: { fetch: Fetch; allowLoopback: boolean; now: () => Date }): ProviderClient {
  const issuerHost = new URL(provider.issuer).host;
  const policy = { allowLoopback: options.allowLoopback, expectedHost: issuerHost };
  let server: Promise<{ oauth: OAuthServer; jwks: JWTVerifyGetKey }> | undefined;
  const ready = () => {
    server ??= discoverServer({ issuer: provider.issuer, clientId: provider.clientId, clientSecret: provider.clientSecret, fetch: options.fetch })
      .then((oauth) => {
        const metadata = oauth.metadata();
        for (const [name, value] of Object.entries({ authorization_endpoint: metadata.authorizationEndpoint, token_endpoint: metadata.tokenEndpoint, jwks_uri: metadata.jwksUri })) {
          checkUrl(value ?? '', policy, `${provider.id} ${name}`);
        }
        const fetchKeys = strictFetch(options.fetch, { maxBytes: MAX_AUTH_RESPONSE_BYTES });
        const jwks = createRemoteJWKSet(new URL(metadata.jwksUri ?? ''), { [joseCustomFetch]: (url, init) => fetchKeys(url, init as RequestInit) });
        return { oauth, jwks };
      })
      .catch((err: unknown) => {
        server = undefined;
        throw err;
      });
    return server;
  };

  async function toProviderTokens(tokens: ServerTokens, jwks: JWTVerifyGetKey): Promise<ProviderTokens> {
    try {
      await jwtVerify(tokens.accessToken, jwks, {
        issuer: provider.issuer,
        audience: provider.audience,
        algorithms: ACCESS_TOKEN_ALGORITHMS,
        requiredClaims: ACCESS_TOKEN_REQUIRED_CLAIMS,
        currentDate: options.now(),
      });
    } catch (cause) {
      throw new UpstreamAuthError(`${provider.displayName} issued an access token that is not for ${provider.audience}.`, { cause });
    }
    return {
      accessToken: tokens.accessToken,
      refreshToken: tokens.refreshToken,
      expiresAt: tokens.expiresInSeconds === undefined ? undefined : new Date(options.now().getTime() + tokens.expiresInSeconds * 1000),
      upstreamSubject: tokens.idTokenSubject,
    };
  }

  return {
    provider,
    async destination() {
      const endpoint = new URL((await ready()).oauth.metadata().authorizationEndpoint ?? '');
      return { scheme: endpoint.protocol.replace(':', ''), host: endpoint.host };
    },
    async beginAuthorization(redirectUri) {
      const { oauth } = await ready();
      const authorization = await oauth.beginAuthorization({ redirectUri, scope: provider.scopes.join(' '), resource: provider.audience });
      checkUrl(authorization.url.href.replace(/[?#].*$/, ''), policy, `${provider.id} authorization URL`);
      return authorization;
    },
    async completeAuthorization(currentUrl, redirectUri, checks) {
      const { oauth, jwks } = await ready();
      return toProviderTokens(await oauth.completeAuthorization(currentUrl, redirectUri, checks, provider.audience), jwks);
    },
    async refresh(refreshToken) {
      const { oauth, jwks } = await ready();
      const tokens = await oauth.refresh(refreshToken, provider.audience);
      return toProviderTokens({ ...tokens, refreshToken: tokens.refreshToken ?? refreshToken }, jwks);
    },
  };
}
