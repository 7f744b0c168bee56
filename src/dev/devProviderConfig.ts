import { type Account, type AdapterFactory, type Configuration, errors, type KoaContextWithOIDC } from 'oidc-provider';
import type { Render } from '../web/render.js';
import type { Fetch } from '../shared/httpClient.js';
import type { DevAuthKeys } from './devAuthKeys.js';
import { createProviderPages } from './devProviderPages.js';
import { clientPolicy, openRegistrationFeatures } from './devRegistration.js';
import { type DevUser, devUsers, findDevUser } from './devUsers.js';
import { memoryAdapter } from './devProviderAdapter.js';

/**
 * A client registered statically with a development authorization server:
 * confidential (client_secret_basic or client_secret_post) unless `public`
 * (token_endpoint_auth_method none; PKCE is required of every client anyway).
 */
export type DevClient = DevClientBase & ({ public?: false; clientSecret: string } | { public: true });

interface DevClientBase {
  clientId: string;
  redirectUris: string[];
  postLogoutRedirectUris?: string[];
  /** Shown on the consent page; defaults to the client id. */
  name?: string;
  /** Defaults to both. A client with `refresh_token` gets a refresh token with every code grant. */
  grantTypes?: ('authorization_code' | 'refresh_token')[];
  /** Every ID Token says when the user authenticated (`auth_time`; OpenID Connect Registration `require_auth_time`). */
  requireAuthTime?: boolean;
}

/** A protected resource (RFC 8707) that gets JWT access tokens from the server. */
export interface DevResource {
  identifier: string;
  /** Space-separated scopes the resource accepts. */
  scope: string;
  accessTokenTtlSeconds: number;
}

export interface DevProviderConfigOptions {
  brand: string;
  cookiePrefix: string;
  keys: DevAuthKeys;
  clients: DevClient[];
  resources: DevResource[];
  subjectOf: (login: string) => string;
  /** Each user's `roles` claim (default: `devUsers`' roles). */
  rolesOf?: (login: string) => readonly string[];
  render: Render;
  /** Where its sessions, grants and tokens are kept (default: memory, devProviderAdapter.ts). */
  adapter?: AdapterFactory;
  /** Dynamic Client Registration and Client ID Metadata Documents (fetched with `fetch`), loopback clients only. */
  openRegistration?: { fetch: Fetch };
}

const MINUTE = 60;
const DAY = 24 * 60 * MINUTE;

/** The oidc-provider configuration shared by the development IdP and the Report Service. */
export function buildProviderConfig(options: DevProviderConfigOptions): Configuration {
  const { resources } = options;
  const pages = createProviderPages({ render: options.render, brand: options.brand });
  const registration = options.openRegistration ? openRegistrationFeatures(options.openRegistration.fetch) : undefined;
  const staticClientIds = new Set(options.clients.map((c) => c.clientId));
  const users = directory(options.subjectOf, options.rolesOf ?? ((login) => findDevUser(login)?.roles ?? []));
  return {
    // In memory unless the caller persists it (devStack.ts keeps npm start's in DATA_DIR).
    adapter: options.adapter ?? memoryAdapter(),
    ...(registration ? { fetch: registration.fetch } : {}),
    extraClientMetadata: clientPolicy({ staticClientIds, openRegistration: registration !== undefined }),
    clients: options.clients.map((c) => ({
      client_id: c.clientId,
      ...(c.public ? { token_endpoint_auth_method: 'none' } : { client_secret: c.clientSecret }),
      client_name: c.name ?? c.clientId,
      redirect_uris: c.redirectUris,
      post_logout_redirect_uris: c.postLogoutRedirectUris ?? [],
      grant_types: c.grantTypes ?? ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(c.requireAuthTime && { require_auth_time: true }),
    })),
    clientDefaults: { id_token_signed_response_alg: 'ES256', token_endpoint_auth_method: 'client_secret_basic' },
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    responseTypes: ['code'],
    jwks: { keys: options.keys.jwks.keys },
    cookies: {
      names: {
        session: `${options.cookiePrefix}_session`,
        interaction: `${options.cookiePrefix}_interaction`,
        resume: `${options.cookiePrefix}_interaction_resume`,
      },
      keys: options.keys.cookieKeys,
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    // `roles` rides with profile, like a custom claim an IdP adds by rule (Auth0 actions, Keycloak mappers).
    claims: { openid: ['sub'], profile: ['name', 'preferred_username', 'roles'], email: ['email'] },
    // JWT access tokens carry the roles too, so the operator CLI can present an IdP token.
    extraTokenClaims: async (_ctx, token) => {
      const roles = token.accountId ? [...(users.find(token.accountId)?.roles ?? [])] : [];
      return roles.length > 0 ? { roles } : undefined;
    },
    scopes: ['openid', 'offline_access', 'profile', 'email'],
    findAccount: async (_ctx, sub) => accountOf(sub, users),
    pkce: { required: () => true },
    // Policy: a client registered with the refresh_token grant gets a refresh token
    // with every code grant, offline_access or not (oidc-provider drops
    // offline_access unless prompt=consent), and it outlives the browser session.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // Every refresh rotates the refresh token (RFC 9700 §4.14.2): a spent one used again is refused and
    // ends the grant, so a broker that ever refreshed twice with one token would be caught here.
    rotateRefreshToken: true,
    expiresWithSession: async () => false,
    ttl: {
      AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 10 * MINUTE,
      AuthorizationCode: MINUTE,
      IdToken: 10 * MINUTE,
      Interaction: 10 * MINUTE,
      Session: DAY,
      Grant: 14 * DAY,
      RefreshToken: 14 * DAY,
    },
    renderError: pages.renderError,
    features: {
      ...registration?.features,
      devInteractions: { enabled: false },
      // RFC 7009 §2.1: a client may revoke only the tokens issued to it.
      revocation: { enabled: true, allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId },
      userinfo: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: pages.logoutSource,
        postLogoutSuccessSource: pages.postLogoutSuccessSource,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (ctx, _client, oneOf) => oneOf ?? impliedResource(ctx, resources),
        // A code granted for one resource yields that resource's JWT at the token
        // endpoint even without `resource` there and even with `openid` in scope.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator) => {
          const resource = resources.find((r) => r.identifier === indicator);
          if (!resource) throw new errors.InvalidTarget();
          return {
            scope: resource.scope,
            audience: resource.identifier,
            accessTokenTTL: resource.accessTokenTtlSeconds,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
  };
}

interface Directory {
  /** The demo user behind a subject, with the roles the provider gives them now. */
  find(sub: string): (DevUser & { roles: readonly string[] }) | undefined;
}

function directory(subjectOf: (login: string) => string, rolesOf: (login: string) => readonly string[]): Directory {
  return {
    find(sub) {
      const user = devUsers.find((u) => subjectOf(u.login) === sub);
      return user ? { ...user, roles: rolesOf(user.login) } : undefined;
    },
  };
}

// Claims are read at each token's issue, so a changed role shows in the next sign-in's tokens.
function accountOf(sub: string, users: Directory): Account | undefined {
  const user = users.find(sub);
  if (!user) return undefined;
  return {
    accountId: sub,
    claims: () => ({ sub, name: user.name, preferred_username: user.login, email: user.email, roles: [...user.roles] }),
  };
}

// An authorization request without `resource` that asks for a resource's scope
// means that resource (so a client unaware of RFC 8707 still gets a usable token).
function impliedResource(ctx: KoaContextWithOIDC, resources: DevResource[]): string | string[] | undefined {
  const scope = ctx.oidc.params?.['scope'];
  const requested = new Set(typeof scope === 'string' ? scope.split(' ') : []);
  const implied = resources.filter((r) => r.scope.split(' ').some((s) => requested.has(s))).map((r) => r.identifier);
  if (implied.length <= 1) return implied[0];
  return implied;
}
