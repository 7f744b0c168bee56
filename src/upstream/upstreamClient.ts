import type { SecretBox } from '../crypto/secretBox.js';
import type { Pool } from '../db/pool.js';
import { createProviderClient, type ProviderClient } from '../oauth/providerClient.js';
import type { Provider } from '../providers/providerConfig.js';
import type { Fetch } from '../shared/httpClient.js';
import { singleFlight } from '../shared/singleFlight.js';
import { discoverUpstream, type UpstreamDiscovery } from './discovery.js';
import { heldToPin } from './issuerPin.js';
import { registerClient, type ClientRegistration } from './registration.js';
import { tokenAudienceProblem } from '../providers/selfReference.js';
import type { UpstreamEntry } from '../providers/upstreamEntry.js';
import { IssuerChangedError } from '../errors/upstreamErrors.js';

export interface UpstreamClientDeps {
  fetch: Fetch;
  /** Development: loopback URLs pass the URL policy. */
  allowLoopback: boolean;
  now: () => Date;
  pool: Pool;
  /** Seals a dynamically registered client's secret (the vault's box). */
  box: SecretBox;
  /** This instance's origin: its redirect URI and Client ID Metadata Documents. */
  publicUrl: URL;
  /** The broker's own OIDC issuer, which no upstream may use (selfReference.ts). */
  issuer: string | undefined;
  /** Each discovery or registration request's deadline. */
  timeoutMs?: number;
}

/** What resolving an upstream found: how it is authorized, the client the broker is there, and the provider that makes. */
export interface ResolvedUpstream {
  discovery: UpstreamDiscovery;
  registration: ClientRegistration;
  provider: Provider;
}

/** A provider client for an upstream MCP server, and the resolution behind it (`broker upstreams check`). */
export interface UpstreamClient extends ProviderClient {
  resolve(): Promise<ResolvedUpstream>;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * The provider client of an upstream MCP server, as the connect flow, the vault and refresh use
 * every provider: resolved on first use (discovery.ts, then registration.ts) once for every caller
 * at a time, kept once it succeeded and tried again after a failure, so a server that is down
 * delays only its own connections, never start-up. The completed provider is plain OAuth 2.0 with
 * the discovered endpoints, PKCE, and the upstream's resource indicator on every request; until
 * then `provider` holds what the entry said (the flow reads only those fields before it awaits
 * one of the methods). The scopes asked for always include the upstream's own (its challenge,
 * else its metadata) where the entry chose none: a flow may have started before they were known.
 */
export function createUpstreamClient(
  entry: Provider & { upstream: UpstreamEntry },
  deps: UpstreamClientDeps,
): UpstreamClient {
  let resolved: (ResolvedUpstream & { client: ProviderClient }) | undefined;
  const fetchDeps = {
    fetch: deps.fetch,
    allowLoopback: deps.allowLoopback,
    timeoutMs: deps.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  };
  const resolve = singleFlight(
    async () => {
      // Held to the pinned authorization server before any client, secret or token is used there.
      const discovery = await heldToPin(deps, entry.id, entry.upstream.issuer, (pinned) =>
        discoverUpstream(entry.id, entry.upstream, fetchDeps, {
          pinned,
          self: { publicUrl: deps.publicUrl, issuer: deps.issuer },
        }),
      );
      const registration = await registerClient(entry, discovery.authorizationServer, { ...deps, ...fetchDeps });
      const provider = completed(entry, discovery, registration);
      const client = createProviderClient(provider, {
        fetch: deps.fetch,
        allowLoopback: deps.allowLoopback,
        now: deps.now,
        serverMetadata: discovery.authorizationServer.metadata,
        // An upstream's JWT access token must be for it: never one the broker itself would accept.
        checkAccessToken: (accessToken) => tokenAudienceProblem(accessToken, entry.upstream.url),
      });
      resolved = { discovery, registration, provider, client };
      return resolved;
    },
    { keepResult: true },
  );
  const withScopes = (own: readonly string[], asked: readonly string[] | undefined) => [
    ...new Set([...own, ...(asked ?? [])]),
  ];
  return {
    get provider() {
      return resolved?.provider ?? entry;
    },
    resolve,
    destination: async () => (await resolve()).client.destination(),
    async beginAuthorization(redirectUri, scopes) {
      const { client, provider } = await resolve();
      return client.beginAuthorization(redirectUri, withScopes(provider.scopes, scopes));
    },
    async completeAuthorization(currentUrl, redirectUri, checks, asked) {
      const { client, provider } = await resolve();
      return client.completeAuthorization(currentUrl, redirectUri, checks, withScopes(provider.scopes, asked));
    },
    async refresh(refreshToken, issuer) {
      const { client, provider } = await resolve();
      // A grant of another authorization server (pinned before an operator re-pinned) is never sent here.
      if (issuer !== undefined && issuer !== provider.issuer)
        throw new IssuerChangedError(entry.id, issuer, provider.issuer ?? '');
      return client.refresh(refreshToken);
    },
    // Never throws, as every provider client's: an upstream that cannot be resolved was not asked.
    revoke: (tokens) =>
      resolve().then(
        ({ client }) => client.revoke(tokens),
        () => ({ outcome: 'failed' as const, reason: 'could not be reached' }),
      ),
  };
}

function completed(
  entry: Provider & { upstream: UpstreamEntry },
  discovery: UpstreamDiscovery,
  registration: ClientRegistration,
): Provider {
  const server = discovery.authorizationServer;
  return {
    ...entry,
    issuer: server.issuer,
    authorizationEndpoint: server.authorizationEndpoint,
    tokenEndpoint: server.tokenEndpoint,
    revocationEndpoint: server.revocationEndpoint,
    clientId: registration.clientId,
    clientSecret: registration.clientSecret,
    clientAuth: registration.clientAuth,
    // The MCP spec's scope selection: the operator's, else the challenge's, else the metadata's, else none.
    scopes: [...(entry.upstream.scopes ?? discovery.challengedScopes ?? discovery.scopesSupported ?? [])],
    resource: discovery.resource,
  };
}
