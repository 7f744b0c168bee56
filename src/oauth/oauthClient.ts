import * as client from 'openid-client';
import { UnavailableError } from '../errors/appError.js';
import { checkUrl, UrlPolicyError, type UrlPolicy } from '../security/urlPolicy.js';
import { strictFetch, type Fetch } from '../shared/httpClient.js';
import type { Secret } from '../shared/secret.js';
import type { Conformer, TokenExtras } from '../providers/conformers/conformer.js';
import { failureDetail, failureReason, oauthErrorHandler } from './oauthErrors.js';
import { signInSupport, type SignInMetadata } from './signInSupport.js';
import { singleFlight } from '../shared/singleFlight.js';
import { oauthCallName, tracedFetch } from '../telemetry/tracedFetch.js';

// The only importer of openid-client besides oauthErrors.ts (a lint rule). The rest of the app sees
// these types, never openid-client's.

export interface ServerOptions {
  issuer: string;
  clientId: string;
  clientSecret: Secret;
  fetch: Fetch;
}

/** What an authorization redirect must remember for its callback; `nonce` and `codeVerifier` are '' where none was sent. */
export interface AuthorizationChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** The `max_age` the request sent (OpenID Connect Core §3.1.2.1): the ID Token must then carry an `auth_time` within it. */
  maxAgeSeconds?: number;
}

/** RFC 6749 §2.3.1: the client secret in HTTP Basic, or in the form body; `none`: a public client (§2.1), PKCE its only proof. */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

/** How an authorization request departs from the OpenID Connect defaults (scope, PKCE and a nonce). */
export interface AuthorizationParams {
  redirectUri: string;
  scope: string;
  /** The parameter that carries the scopes (Slack user tokens: `user_scope`). */
  scopeParam?: string;
  /** RFC 8707 resource indicator, only for servers that take it. */
  resource?: string;
  /** RFC 7636 S256; on unless the server refuses it. */
  pkce?: boolean;
  /** OpenID Connect nonce; only where an ID Token is expected. */
  nonce?: boolean;
  /** Fixed extra parameters (Google `access_type`). */
  extra?: Readonly<Record<string, string>>;
}

/** What the token request adds, and whether its answer must hold an ID Token. */
export interface TokenRequestOptions {
  resource?: string;
  extra?: Readonly<Record<string, string>>;
  idTokenExpected?: boolean;
}

export interface ServerTokens {
  accessToken: string;
  refreshToken: string | undefined;
  expiresInSeconds: number | undefined;
  idTokenSubject: string | undefined;
  idTokenIssuer: string | undefined;
  idTokenClaims: Record<string, unknown> | undefined;
  /** The granted scopes the answer names (RFC 6749 §5.1); undefined where it names none. */
  scope: string | undefined;
  /** Connection metadata the provider's conformer kept from the answer (never a token). */
  extras: TokenExtras;
}

export interface ServerMetadata {
  authorizationEndpoint: string | undefined;
  tokenEndpoint: string | undefined;
  jwksUri: string | undefined;
  userinfoEndpoint: string | undefined;
  /** RFC 7009 §2: where tokens are revoked, if the server has such an endpoint. */
  revocationEndpoint: string | undefined;
  /** What the server says it supports of what sign-in needs (signInSupport.ts). */
  signIn: SignInMetadata;
}

/** The most the broker reads of any authorization server's answer (metadata, key sets, token responses). */
export const MAX_AUTH_RESPONSE_BYTES = 512 * 1024;

// openid-client's options are a subset of RequestInit (method, headers, body, redirect, signal).
// Redirects are refused and bodies bounded: openid-client already asks for
// redirect: 'manual', and this holds whatever fetch is injected. Each request is a span named for what
// it asks (discovery, token exchange, refresh), its trace context sent along.
function authServerFetch(fetch: Fetch): client.CustomFetch {
  const bounded = tracedFetch(strictFetch(fetch, { maxBytes: MAX_AUTH_RESPONSE_BYTES }), { name: oauthCallName });
  return (url, init) => bounded(url, init as RequestInit);
}

function metadataOf(config: client.Configuration): ServerMetadata {
  const m = config.serverMetadata();
  return {
    authorizationEndpoint: m.authorization_endpoint,
    tokenEndpoint: m.token_endpoint,
    jwksUri: m.jwks_uri,
    userinfoEndpoint: m.userinfo_endpoint,
    revocationEndpoint: m.revocation_endpoint,
    signIn: {
      responseTypes: stringList(m.response_types_supported),
      grantTypes: stringList(m.grant_types_supported),
      codeChallengeMethods: stringList(m.code_challenge_methods_supported),
    },
  };
}

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : undefined;
}

/**
 * An issuer's discovery metadata, for a resource server that verifies its
 * tokens (no client): openid-client requires https and an `issuer` equal to
 * the one asked for (OpenID Connect Discovery 1.0 §4.3). Throws
 * UnavailableError, with the reason in its cause, when it cannot be used.
 */
export async function discoverIssuerMetadata(options: { issuer: string; fetch: Fetch }): Promise<ServerMetadata> {
  const customFetch = authServerFetch(options.fetch);
  try {
    // Discovery sends no client credentials; openid-client's API wants a client id all the same.
    return metadataOf(
      await client.discovery(new URL(options.issuer), 'resource-server', undefined, client.None(), {
        [client.customFetch]: customFetch,
      }),
    );
  } catch (err) {
    throw new UnavailableError(`The metadata of ${options.issuer} could not be loaded.`, { cause: err });
  }
}

/** One discovered authorization server, seen as a confidential client of it. */
export interface OAuthServer {
  metadata(): ServerMetadata;
  beginAuthorization(params: AuthorizationParams): Promise<AuthorizationChecks & { url: URL }>;
  /** Checks state, PKCE, `iss` (RFC 9207) and, where expected, the nonce and ID Token, then exchanges the code. */
  completeAuthorization(
    currentUrl: URL,
    redirectUri: string,
    checks: AuthorizationChecks,
    options?: TokenRequestOptions,
  ): Promise<ServerTokens>;
  refresh(refreshToken: string, options?: Omit<TokenRequestOptions, 'idTokenExpected'>): Promise<ServerTokens>;
  /** The UserInfo claims for an access token, checked to belong to `subject`; undefined when the server has no UserInfo endpoint. */
  userInfo(accessToken: string, subject: string): Promise<Record<string, unknown> | undefined>;
  /**
   * RFC 7009 revocation of `token` at the metadata's revocation endpoint (client authenticated as
   * at the token endpoint): true once the server answered 200, else why not (oauthErrors.ts
   * failureReason: an error code or a status, never the server's words). Never throws.
   */
  revoke(
    token: string,
    hint: 'access_token' | 'refresh_token',
  ): Promise<{ revoked: true } | { revoked: false; reason: string }>;
}

export async function discoverServer(options: ServerOptions): Promise<OAuthServer> {
  const customFetch = authServerFetch(options.fetch);
  let config: client.Configuration;
  try {
    config = await client.discovery(
      new URL(options.issuer),
      options.clientId,
      options.clientSecret.reveal(),
      undefined,
      { [client.customFetch]: customFetch },
    );
    config[client.customFetch] = customFetch;
  } catch (err) {
    return oauthErrorHandler(err);
  }
  return serverOver(config, { knownIssuer: true });
}

/**
 * A third-party provider as the broker's connect flow sees it: discovered
 * (OpenID Connect Discovery for `oidc`, RFC 8414 for `oauth2`), or plain
 * OAuth 2.0 with explicit endpoints.
 */
export interface ProviderServerOptions {
  server:
    | { discover: string; algorithm: 'oidc' | 'oauth2' }
    | { issuer: string | undefined; authorizationEndpoint: string; tokenEndpoint: string }
    /** A metadata document the caller discovered and checked itself (src/upstream/discovery.ts), used as it is. */
    | { metadata: Readonly<Record<string, unknown>> & { issuer: string } };
  clientId: string;
  clientSecret: Secret;
  clientAuth: ClientAuthMethod;
  fetch: Fetch;
  /** Makes the token endpoint's answers standard before openid-client reads them. */
  conformer: Conformer;
  /** Member paths of the token answer to keep as extras beside the conformer's own. */
  keepExtras?: readonly string[];
  /** The RFC 7009 endpoint the provider's entry names, where discovery names none (or nothing is discovered). */
  revocationEndpoint?: string;
}

export async function connectProviderServer(options: ProviderServerOptions): Promise<OAuthServer> {
  const secret = options.clientSecret.reveal();
  const auth =
    options.clientAuth === 'none'
      ? client.None()
      : options.clientAuth === 'client_secret_basic'
        ? client.ClientSecretBasic(secret)
        : client.ClientSecretPost(secret);
  const bounded = authServerFetch(options.fetch);
  let config: client.Configuration | undefined;
  const customFetch = conformingFetch(
    bounded,
    () => config?.serverMetadata().token_endpoint,
    options.conformer,
    options.keepExtras ?? [],
  );
  const { server } = options;
  try {
    if ('discover' in server) {
      config = await client.discovery(new URL(server.discover), options.clientId, undefined, auth, {
        [client.customFetch]: customFetch,
        algorithm: server.algorithm,
      });
      const { supportsPKCE: _helper, ...discovered } = config.serverMetadata();
      if (options.revocationEndpoint !== undefined && discovered.revocation_endpoint === undefined)
        config = new client.Configuration(
          { ...discovered, revocation_endpoint: options.revocationEndpoint },
          options.clientId,
          undefined,
          auth,
        );
    } else if ('metadata' in server) {
      // JSON members the caller read from a document and checked: openid-client's own metadata type.
      const metadata = { ...server.metadata } as client.ServerMetadata;
      config = new client.Configuration(metadata, options.clientId, undefined, auth);
    } else {
      // openid-client needs an issuer identifier; without one (GitHub publishes none) a name that no `iss` can equal.
      const metadata: client.ServerMetadata = {
        issuer: server.issuer ?? `urn:connect-broker:no-issuer:${options.clientId}`,
        authorization_endpoint: server.authorizationEndpoint,
        token_endpoint: server.tokenEndpoint,
        ...(options.revocationEndpoint !== undefined && { revocation_endpoint: options.revocationEndpoint }),
        // A declared issuer identifier is required back in every authorization response (RFC 9207 §2.4).
        ...(server.issuer !== undefined && { authorization_response_iss_parameter_supported: true }),
      };
      config = new client.Configuration(metadata, options.clientId, undefined, auth);
    }
    config[client.customFetch] = customFetch;
  } catch (err) {
    return oauthErrorHandler(err);
  }
  return serverOver(config, { knownIssuer: !('issuer' in server) || server.issuer !== undefined });
}

/**
 * The token endpoint's answer through the provider's conformer: read it,
 * make it RFC 6749 §5.1/§5.2, and hand openid-client a standard JSON
 * response. Other endpoints (discovery, key sets, UserInfo) pass unchanged.
 */
function conformingFetch(
  fetch: client.CustomFetch,
  tokenEndpoint: () => string | undefined,
  conformer: Conformer,
  keep: readonly string[],
): client.CustomFetch {
  return async (url, init) => {
    const response = await fetch(url, init);
    const endpoint = tokenEndpoint();
    if (endpoint === undefined || withoutQuery(url) !== withoutQuery(endpoint)) return response;
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: the conformer decodes form bodies itself
    }
    const conformed = conformer({ status: response.status, headers: Object.fromEntries(response.headers), body }, keep);
    // The extras ride in a member of the conformer's own making (openid-client keeps unknown members), so concurrent exchanges never share state.
    const standardBody =
      conformed.status === 200 ? { ...conformed.body, [EXTRAS_MEMBER]: conformed.extras } : conformed.body;
    return new Response(JSON.stringify(standardBody), {
      status: conformed.status,
      headers: { 'content-type': 'application/json' },
    });
  };
}

const EXTRAS_MEMBER = 'connect_broker_extras';

function extrasOf(tokens: client.TokenEndpointResponse): TokenExtras {
  const extras = tokens[EXTRAS_MEMBER];
  return typeof extras === 'object' && extras !== null ? (extras as TokenExtras) : {};
}

function withoutQuery(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

function serverOver(config: client.Configuration, { knownIssuer }: { knownIssuer: boolean }): OAuthServer {
  const toTokens = (tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers): ServerTokens => {
    const claims = tokens.claims();
    return {
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token,
      expiresInSeconds: tokens.expiresIn(),
      idTokenSubject: claims?.sub,
      idTokenIssuer: claims?.iss,
      idTokenClaims: claims ? { ...claims } : undefined,
      scope: tokens.scope,
      extras: extrasOf(tokens),
    };
  };
  return {
    metadata: () => metadataOf(config),
    async beginAuthorization({
      redirectUri,
      scope,
      scopeParam = 'scope',
      resource,
      pkce = true,
      nonce: withNonce = true,
      extra = {},
    }) {
      const codeVerifier = pkce ? client.randomPKCECodeVerifier() : '';
      const state = client.randomState();
      const nonce = withNonce ? client.randomNonce() : '';
      const url = client.buildAuthorizationUrl(config, {
        ...extra,
        redirect_uri: redirectUri,
        // No scopes at all (Notion: the user picks pages on its consent screen) sends no empty parameter.
        ...(scope !== '' && { [scopeParam]: scope }),
        response_type: 'code',
        ...(pkce && {
          code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
          code_challenge_method: 'S256',
        }),
        state,
        ...(withNonce && { nonce }),
        ...(resource ? { resource } : {}),
      });
      return { url, state, nonce, codeVerifier };
    },
    async completeAuthorization(
      currentUrl,
      redirectUri,
      checks,
      { resource, extra = {}, idTokenExpected = true } = {},
    ) {
      // Without an issuer identifier an `iss` cannot be compared (RFC 9207 §2.4); the per-provider redirect URI is then the mix-up defence (RFC 9700 §4.4.2).
      const response = new URL(currentUrl);
      if (!knownIssuer) response.searchParams.delete('iss');
      try {
        const tokens = await client.authorizationCodeGrant(
          config,
          response,
          {
            ...(checks.codeVerifier !== '' && { pkceCodeVerifier: checks.codeVerifier }),
            expectedState: checks.state,
            ...(checks.nonce !== '' && { expectedNonce: checks.nonce }),
            ...(checks.maxAgeSeconds !== undefined && { maxAge: checks.maxAgeSeconds }),
            idTokenExpected,
          },
          { ...extra, redirect_uri: redirectUri, ...(resource ? { resource } : {}) },
        );
        return toTokens(tokens);
      } catch (err) {
        return oauthErrorHandler(err);
      }
    },
    async userInfo(accessToken, subject) {
      if (!config.serverMetadata().userinfo_endpoint) return undefined;
      try {
        return { ...(await client.fetchUserInfo(config, accessToken, subject)) };
      } catch (err) {
        return oauthErrorHandler(err);
      }
    },
    async revoke(token, hint) {
      try {
        await client.tokenRevocation(config, token, { token_type_hint: hint });
        return { revoked: true };
      } catch (err) {
        return { revoked: false, reason: failureReason(err) };
      }
    },
    async refresh(refreshToken, { resource, extra = {} } = {}) {
      try {
        return toTokens(
          await client.refreshTokenGrant(config, refreshToken, { ...extra, ...(resource ? { resource } : {}) }),
        );
      } catch (err) {
        return oauthErrorHandler(err);
      }
    },
  };
}

export interface LoginRedirect extends AuthorizationChecks {
  url: URL;
}

export interface VerifiedLogin {
  issuer: string;
  subject: string;
  displayName: string;
  /** The ID Token's claims over the UserInfo claims (for roles such as OPERATOR_ROLE_CLAIM). */
  claims: Record<string, unknown>;
  /**
   * How long before the ID Token was issued the user authenticated (`iat` − `auth_time`, both on the
   * issuer's clock, so no clock skew enters it); undefined when the ID Token has no `auth_time`.
   */
  authAgeSeconds: number | undefined;
}

export interface OidcClient {
  /**
   * `reauthenticate`: the user must authenticate again, not ride on the issuer's session
   * (`prompt=login`, and `max_age` so that the ID Token must say when: `auth_time`).
   */
  beginLogin(params: {
    redirectUri: string;
    scope: string;
    reauthenticate?: { maxAgeSeconds: number };
  }): Promise<LoginRedirect>;
  completeLogin(currentUrl: URL, redirectUri: string, checks: AuthorizationChecks): Promise<VerifiedLogin>;
  /** Resolves when the issuer's metadata could be loaded and sign-in can use it. */
  ready(): Promise<void>;
  /**
   * Why sign-in cannot start now, in a few words for /readyz (no secret, nothing the issuer sent):
   * undefined once discovery succeeded, which is kept; a failure is tried again on the next call.
   */
  problem(): Promise<string | undefined>;
}

export interface OidcClientOptions extends ServerOptions {
  /** Development: loopback issuers and endpoints pass the URL policy. */
  allowLoopback: boolean;
}

/**
 * Browser sign-in against the broker's own issuer; discovery is lazy and
 * retried after a failure. The issuer, the redirect URI (on PUBLIC_URL) and
 * every endpoint the issuer's metadata names must pass the URL policy; a
 * refused one fails the sign-in before anything is sent to it. Endpoints are
 * not pinned to the issuer's host: real issuers serve some from sibling hosts
 * (UserInfo on graph.microsoft.com for login.microsoftonline.com).
 */
export function createOidcClient(options: OidcClientOptions): OidcClient {
  const policy = { allowLoopback: options.allowLoopback };
  checkUrl(options.issuer, policy, 'OIDC issuer');
  // Lazy, and tried again after a failure (the next request).
  const discover = singleFlight(
    () =>
      discoverServer(options).then((discovered) => {
        const m = discovered.metadata();
        const endpoints = {
          authorization_endpoint: m.authorizationEndpoint ?? '',
          token_endpoint: m.tokenEndpoint ?? '',
          userinfo_endpoint: m.userinfoEndpoint,
          jwks_uri: m.jwksUri,
        };
        for (const [name, value] of Object.entries(endpoints)) {
          if (value !== undefined) policyChecked(value, policy, `the ${options.issuer} ${name}`);
        }
        // An issuer that says it cannot do what sign-in sends would refuse every user: said here,
        // where /readyz sees it, not at each /login.
        const { missing } = signInSupport(m.signIn);
        if (missing.length > 0)
          throw new UnavailableError(`Sign-in is unavailable: its metadata advertises no ${missing.join(', no ')}`);
        return discovered;
      }),
    { keepResult: true },
  );
  return {
    async ready() {
      await discover();
    },
    problem: () =>
      discover().then(
        () => undefined,
        (err: unknown) => `discovery failed (${failureDetail(err).replace(/^Sign-in is unavailable: /, '')})`,
      ),
    async beginLogin({ redirectUri, scope, reauthenticate }) {
      policyChecked(redirectUri, { ...policy, allowIpLiteral: true }, 'the sign-in redirect URI');
      const extra = reauthenticate ? { prompt: 'login', max_age: String(reauthenticate.maxAgeSeconds) } : {};
      const login = await (await discover()).beginAuthorization({ redirectUri, scope, extra });
      return reauthenticate ? { ...login, maxAgeSeconds: reauthenticate.maxAgeSeconds } : login;
    },
    async completeLogin(currentUrl, redirectUri, checks) {
      const server = await discover();
      const tokens = await server.completeAuthorization(currentUrl, redirectUri, checks);
      if (!tokens.idTokenSubject || !tokens.idTokenIssuer)
        return oauthErrorHandler(new client.ClientError('no ID Token claims'));
      // An IdP that keeps profile claims out of the ID Token (code flow) serves them at UserInfo.
      const claims = { ...(await server.userInfo(tokens.accessToken, tokens.idTokenSubject)), ...tokens.idTokenClaims };
      const name = typeof claims['name'] === 'string' ? claims['name'] : undefined;
      const username = typeof claims['preferred_username'] === 'string' ? claims['preferred_username'] : undefined;
      // openid-client has checked both are numbers when present; `iat` always is.
      const { auth_time: authTime, iat } = tokens.idTokenClaims ?? {};
      return {
        issuer: tokens.idTokenIssuer,
        subject: tokens.idTokenSubject,
        displayName: username ?? name ?? tokens.idTokenSubject,
        claims,
        authAgeSeconds:
          typeof authTime === 'number' && typeof iat === 'number' ? Math.max(0, iat - authTime) : undefined,
      };
    },
  };
}

// A URL the sign-in cannot use is a deployment problem, not the user's: 503, the reason in the log.
function policyChecked(raw: string, policy: UrlPolicy, what: string): URL {
  try {
    return checkUrl(raw, policy, what);
  } catch (err) {
    if (err instanceof UrlPolicyError)
      throw new UnavailableError(`Sign-in is unavailable: ${err.message}`, { cause: err });
    throw err;
  }
}
