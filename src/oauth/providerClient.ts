import { createRemoteJWKSet, customFetch as joseCustomFetch, jwtVerify, type RemoteJWKSet } from 'jose';
import { UpstreamAuthError } from '../errors/appError.js';
import type { Provider } from '../providers/providerConfig.js';
import { ACCESS_TOKEN_ALGORITHMS, ACCESS_TOKEN_REQUIRED_CLAIMS } from '../security/accessTokenPolicy.js';
import { checkUrl } from '../security/urlPolicy.js';
import { strictFetch, type Fetch } from '../shared/httpClient.js';
import { tracedFetch } from '../telemetry/tracedFetch.js';
import { singleFlight } from '../shared/singleFlight.js';
import { conformerFor } from '../providers/conformers/registry.js';
import {
  connectProviderServer,
  MAX_AUTH_RESPONSE_BYTES,
  type AuthorizationChecks,
  type OAuthServer,
  type ServerTokens,
} from './oauthClient.js';
import { revokeAtProvider, type HeldTokens, type Revocation } from './tokenRevocation.js';
import { tokenAnswerPaths, upstreamConnectionOf, type UpstreamConnection } from './upstreamAccount.js';
import { IssuerChangedError } from '../errors/upstreamErrors.js';

export interface ProviderAuthorization extends AuthorizationChecks {
  url: URL;
}

export interface ProviderTokens {
  accessToken: string;
  refreshToken: string | undefined;
  expiresAt: Date | undefined;
}

/** What a completed authorization yields: the tokens for the vault, and the connection's record. */
export interface ProviderGrant {
  tokens: ProviderTokens;
  connection: UpstreamConnection;
}

/** What discovery found of a provider's authorization server. */
export interface DiscoveredServer {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  revocationEndpoint: string | undefined;
}

export interface ProviderClient {
  provider: Provider;
  /** scheme://host of the authorization endpoint: what the user is shown before being sent there. */
  destination(): Promise<{ scheme: string; host: string }>;
  /** `scopes`: what this authorization asks for (default: the provider's; a second consent asks for the union, providers/scopes.ts). */
  beginAuthorization(redirectUri: string, scopes?: readonly string[]): Promise<ProviderAuthorization>;
  /**
   * Exchanges the code, checks the token, and learns the upstream account (upstreamAccount.ts);
   * `asked`: the scopes the authorization asked for, granted where the answer names none.
   */
  completeAuthorization(
    currentUrl: URL,
    redirectUri: string,
    checks: AuthorizationChecks,
    asked?: readonly string[],
  ): Promise<ProviderGrant>;
  /** `issuer`: the authorization server the grant came from (the connection's); another one's client refuses it unsent. */
  refresh(refreshToken: string, issuer?: string): Promise<ProviderTokens>;
  /** Asks the provider to revoke the grant behind these tokens (tokenRevocation.ts); never throws. */
  revoke(tokens: HeldTokens): Promise<Revocation>;
}

/**
 * The broker as an OAuth client of one provider: authorization code with
 * state, PKCE S256 (unless the provider is declared without it), and for
 * OpenID Connect providers a nonce and an ID Token. Every endpoint must pass
 * the URL policy on its own configured host (authorization, token and API
 * hosts often differ; a discovered endpoint without a configured one stays on
 * the issuer's host). The entry's conformer reads every token response. An
 * access token is checked as a JWT for an audience only where the provider
 * issues those; otherwise it is opaque to the broker.
 */
export function createProviderClient(
  provider: Provider,
  options: {
    fetch: Fetch;
    allowLoopback: boolean;
    now: () => Date;
    /** The authorization server's metadata, already discovered and checked (src/upstream/): nothing is fetched. */
    serverMetadata?: Readonly<Record<string, unknown>> & { issuer: string };
    /**
     * Where endpoints come from discovery: holds them to the pinned ones (src/upstream/issuerPin.ts)
     * before anything is sent to them; throws when they changed.
     */
    holdDiscovered?: (found: DiscoveredServer) => Promise<void>;
    /** Why an access token the server issued may not be kept (an upstream's audience); undefined: it may. */
    checkAccessToken?: (accessToken: string) => string | undefined;
  },
): ProviderClient {
  const hostOf = (configured: string | undefined) => new URL(configured ?? provider.issuer ?? '').host;
  const policyFor = (configured: string | undefined) => ({
    allowLoopback: options.allowLoopback,
    expectedHost: hostOf(configured),
  });
  const authorizePolicy = policyFor(provider.authorizationEndpoint);
  const discovered = provider.kind === 'oidc' || provider.metadataDiscovery;
  // Metadata loaded once, lazily; a failure is tried again on the next call.
  const connect = async (): Promise<{ oauth: OAuthServer; jwks: RemoteJWKSet | undefined }> => {
    const oauth = await connectProviderServer({
      server: options.serverMetadata
        ? { metadata: options.serverMetadata }
        : discovered
          ? { discover: provider.issuer ?? '', algorithm: provider.kind }
          : {
              issuer: provider.issuer,
              authorizationEndpoint: provider.authorizationEndpoint ?? '',
              tokenEndpoint: provider.tokenEndpoint ?? '',
            },
      clientId: provider.clientId,
      clientSecret: provider.clientSecret,
      clientAuth: provider.clientAuth,
      fetch: options.fetch,
      conformer: conformerFor(provider.conformer),
      keepExtras: tokenAnswerPaths(provider),
      ...(provider.revocationEndpoint !== undefined && { revocationEndpoint: provider.revocationEndpoint }),
    });
    const metadata = oauth.metadata();
    checkUrl(metadata.authorizationEndpoint ?? '', authorizePolicy, `${provider.id} authorization_endpoint`);
    checkUrl(metadata.tokenEndpoint ?? '', policyFor(provider.tokenEndpoint), `${provider.id} token_endpoint`);
    // Discovered endpoints (openid-client checked the issuer) are held to the pinned ones before use.
    if (!options.serverMetadata && discovered && options.holdDiscovered)
      await options.holdDiscovered({
        issuer: provider.issuer ?? '',
        authorizationEndpoint: metadata.authorizationEndpoint ?? '',
        tokenEndpoint: metadata.tokenEndpoint ?? '',
        revocationEndpoint: metadata.revocationEndpoint,
      });
    if (provider.audience === undefined) return { oauth, jwks: undefined };
    checkUrl(metadata.jwksUri ?? '', policyFor(undefined), `${provider.id} jwks_uri`);
    const fetchKeys = tracedFetch(strictFetch(options.fetch, { maxBytes: MAX_AUTH_RESPONSE_BYTES }), {
      name: () => 'oauth jwks',
    });
    const jwks = createRemoteJWKSet(new URL(metadata.jwksUri ?? ''), {
      [joseCustomFetch]: (url, init) => fetchKeys(url, init as RequestInit),
    });
    return { oauth, jwks };
  };
  const ready = singleFlight(connect, { keepResult: true });

  async function toProviderTokens(tokens: ServerTokens, jwks: RemoteJWKSet | undefined): Promise<ProviderTokens> {
    if (jwks && provider.audience !== undefined) {
      try {
        await jwtVerify(tokens.accessToken, jwks, {
          ...(provider.issuer !== undefined && { issuer: provider.issuer }),
          audience: provider.audience,
          algorithms: ACCESS_TOKEN_ALGORITHMS,
          requiredClaims: ACCESS_TOKEN_REQUIRED_CLAIMS,
          currentDate: options.now(),
        });
      } catch (cause) {
        throw new UpstreamAuthError(
          `${provider.displayName} issued an access token that is not for ${provider.audience}.`,
          { cause },
        );
      }
    }
    const refused = options.checkAccessToken?.(tokens.accessToken);
    if (refused !== undefined)
      throw new UpstreamAuthError(`${provider.displayName} issued a token the broker refuses: ${refused}.`);
    return {
      accessToken: tokens.accessToken,
      refreshToken: tokens.refreshToken,
      expiresAt:
        tokens.expiresInSeconds === undefined
          ? undefined
          : new Date(options.now().getTime() + tokens.expiresInSeconds * 1000),
    };
  }

  const tokenOptions = {
    ...(provider.resource !== undefined && { resource: provider.resource }),
    extra: provider.tokenParams,
  };
  return {
    provider,
    async destination() {
      const endpoint = new URL((await ready()).oauth.metadata().authorizationEndpoint ?? '');
      return { scheme: endpoint.protocol.replace(':', ''), host: endpoint.host };
    },
    async beginAuthorization(redirectUri, scopes = provider.scopes) {
      const { oauth, jwks } = await ready();
      // The callback checks the access token against these keys: fetched while the user is at the
      // provider rather than when they come back. A failure here is the callback's to report, as
      // it fetches them again itself.
      if (jwks && !jwks.fresh && !jwks.reloading) jwks.reload().catch(() => undefined);
      const authorization = await oauth.beginAuthorization({
        redirectUri,
        scope: scopes.join(provider.scopeSeparator),
        scopeParam: provider.scopeParam,
        pkce: provider.pkce,
        nonce: provider.kind === 'oidc',
        extra: provider.authorizeParams,
        ...(provider.resource !== undefined && { resource: provider.resource }),
      });
      checkUrl(authorization.url.href.replace(/[?#].*$/, ''), authorizePolicy, `${provider.id} authorization URL`);
      return authorization;
    },
    async completeAuthorization(currentUrl, redirectUri, checks, asked = provider.scopes) {
      const { oauth, jwks } = await ready();
      const tokens = await oauth.completeAuthorization(currentUrl, redirectUri, checks, {
        ...tokenOptions,
        idTokenExpected: provider.kind === 'oidc',
      });
      const checked = await toProviderTokens(tokens, jwks);
      return { tokens: checked, connection: await upstreamConnectionOf(provider, tokens, options, asked) };
    },
    async refresh(refreshToken, issuer) {
      // A grant of another issuer (the entry's issuer was changed since) is never sent to this one.
      if (issuer !== undefined && provider.issuer !== undefined && issuer !== provider.issuer)
        throw new IssuerChangedError(provider.id, issuer, provider.issuer);
      const { oauth, jwks } = await ready();
      const tokens = await oauth.refresh(refreshToken, tokenOptions);
      return toProviderTokens({ ...tokens, refreshToken: tokens.refreshToken ?? refreshToken }, jwks);
    },
    revoke: (tokens) =>
      revokeAtProvider(provider, tokens, {
        fetch: options.fetch,
        allowLoopback: options.allowLoopback,
        server: async () => (await ready()).oauth,
      }),
  };
}
