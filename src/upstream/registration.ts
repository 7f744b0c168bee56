import { randomUUID } from 'node:crypto';
import { MissingKeyError, type SecretBox } from '../crypto/secretBox.js';
import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { isObject } from '../providers/conformers/responseFields.js';
import type { Provider } from '../providers/providerConfig.js';
import { providerMessage } from '../providers/providerRefusal.js';
import { UnavailableError } from '../errors/appError.js';
import { Secret } from '../shared/secret.js';
import { clientMetadataOf, clientMetadataUrl, redirectUriFor } from './clientMetadata.js';
import type { AuthorizationServer } from './discovery.js';
import {
  findRegistration,
  keepRegistration,
  registrationAad,
  type RegisteredAuthMethod,
  type StoredRegistration,
} from './registrationsRepo.js';
import type { UpstreamEntry } from '../providers/upstreamEntry.js';
import { UpstreamSetupError } from '../errors/upstreamErrors.js';
import { upstreamRequest, type UpstreamFetchDeps } from './upstreamFetch.js';

/** The client the broker is at an upstream's authorization server, and how it was obtained. */
export interface ClientRegistration {
  /** The spec's order: the operator's pre-registered client, a Client ID Metadata Document, or Dynamic Client Registration. */
  mode: 'static' | 'client_id_metadata_document' | 'dynamic';
  clientId: string;
  /** Empty for a public client. */
  clientSecret: Secret;
  clientAuth: RegisteredAuthMethod;
  /** `dynamic`: the registration was found stored (made earlier, by this instance or another). */
  reused: boolean;
}

export interface RegistrationDeps extends UpstreamFetchDeps {
  pool: Pool;
  box: SecretBox;
  /** This instance's origin: the redirect URI and the Client ID Metadata Document are on it. */
  publicUrl: URL;
  now: () => Date;
}

/**
 * The client to use at `server` for `provider`, in the order the MCP authorization spec (2026-07-28,
 * "Client Registration") gives: the pre-registered client an entry with `registration: static`
 * names; else the broker's Client ID Metadata Document where the server supports them; else Dynamic
 * Client Registration (RFC 7591), once per (issuer, upstream, redirect URI) and kept in Postgres;
 * else an UpstreamSetupError naming what the operator must register.
 */
export async function registerClient(
  provider: Provider & { upstream: UpstreamEntry },
  server: AuthorizationServer,
  deps: RegistrationDeps,
): Promise<ClientRegistration> {
  const fail = (message: string): never => {
    throw new UpstreamSetupError(provider.id, 'registration', message);
  };
  const redirectUri = redirectUriFor(deps.publicUrl, provider.id);
  if (provider.upstream.registration === 'static') {
    const secret = provider.clientSecret;
    const clientAuth = secret.reveal() === '' ? 'none' : secretMethod(server.tokenEndpointAuthMethods);
    if (clientAuth === undefined)
      fail(
        `${server.issuer} accepts neither client_secret_basic nor client_secret_post at its token endpoint (it lists ${server.tokenEndpointAuthMethods.join(', ')})`,
      );
    return {
      mode: 'static',
      clientId: provider.clientId,
      clientSecret: secret,
      clientAuth: clientAuth!,
      reused: false,
    };
  }
  // A document's URL is its client_id, which the draft requires to be https.
  if (server.clientIdMetadataDocuments && deps.publicUrl.protocol === 'https:')
    return {
      mode: 'client_id_metadata_document',
      clientId: clientMetadataUrl(deps.publicUrl, provider.id),
      clientSecret: new Secret(''),
      clientAuth: 'none',
      reused: false,
    };
  if (server.registrationEndpoint !== undefined)
    return dynamicRegistration(provider.id, server, server.registrationEndpoint, redirectUri, deps);
  return fail(
    `${server.issuer} supports neither Client ID Metadata Documents nor Dynamic Client Registration: register a client there with the redirect URI ${redirectUri}, then set registration: static and its clientId (and clientSecret, for a confidential client) in this entry`,
  );
}

// A confidential client's secret in HTTP Basic where the server takes it (RFC 8414 §2's default).
function secretMethod(supported: readonly string[]): 'client_secret_basic' | 'client_secret_post' | undefined {
  if (supported.includes('client_secret_basic')) return 'client_secret_basic';
  if (supported.includes('client_secret_post')) return 'client_secret_post';
  return undefined;
}

async function dynamicRegistration(
  upstream: string,
  server: AuthorizationServer,
  endpoint: string,
  redirectUri: string,
  deps: RegistrationDeps,
): Promise<ClientRegistration> {
  const key = { issuer: server.issuer, upstream, redirectUri };
  const stored = await findRegistration(deps.pool, key);
  const usable = stored && opened(stored, deps);
  if (usable) return usable;
  const fresh = await register(upstream, server, endpoint, deps);
  const row: StoredRegistration = {
    id: randomUUID(),
    ...key,
    clientId: fresh.clientId,
    sealedSecret: undefined,
    authMethod: fresh.clientAuth,
    secretExpiresAt: fresh.expiresAt,
    registeredAt: deps.now(),
  };
  if (fresh.clientAuth !== 'none') {
    const { ciphertext, keyId } = deps.box.seal(fresh.clientSecret.reveal(), registrationAad(row.id));
    row.sealedSecret = { ciphertext, keyId };
  }
  await withTransaction(deps.pool, (tx) => keepRegistration(tx, row, stored?.id));
  // Another instance's registration kept first wins; this one stays unused at the server.
  const kept = await findRegistration(deps.pool, key);
  const winner = kept && kept.id !== row.id ? opened(kept, deps) : undefined;
  return (
    winner ?? {
      mode: 'dynamic',
      clientId: fresh.clientId,
      clientSecret: fresh.clientSecret,
      clientAuth: fresh.clientAuth,
      reused: false,
    }
  );
}

/** A stored registration as a client, unless it can no longer be used: its secret expired, or sealed under a key that is gone. */
function opened(stored: StoredRegistration, deps: RegistrationDeps): ClientRegistration | undefined {
  if (stored.secretExpiresAt !== undefined && stored.secretExpiresAt.getTime() <= deps.now().getTime())
    return undefined;
  let secret = '';
  if (stored.sealedSecret) {
    try {
      secret = deps.box.open(stored.sealedSecret, registrationAad(stored.id));
    } catch (err) {
      // A registration can always be made again, unless another live instance holds its key (a key
      // rotation rolling out): registering again would replace a client the connections' tokens
      // belong to. A value that fails authentication is another matter.
      if (err instanceof MissingKeyError && deps.box.heldByLive(err.keyId))
        throw new UnavailableError(
          `The client registration at this upstream is sealed under key ${err.keyId}, which this instance does not hold yet: a key rotation is rolling out. Try again in a moment.`,
          { expose: true },
        );
      if (err instanceof MissingKeyError) return undefined;
      throw err;
    }
  }
  return {
    mode: 'dynamic',
    clientId: stored.clientId,
    clientSecret: new Secret(secret),
    clientAuth: stored.authMethod,
    reused: true,
  };
}

const AUTH_METHODS: readonly RegisteredAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'none'];

/** RFC 7591 §3: the registration request, and its answer (§3.2.1) or error (§3.2.2) checked. */
async function register(
  upstream: string,
  server: AuthorizationServer,
  endpoint: string,
  deps: RegistrationDeps,
): Promise<{ clientId: string; clientSecret: Secret; clientAuth: RegisteredAuthMethod; expiresAt: Date | undefined }> {
  const fail = (message: string): never => {
    throw new UpstreamSetupError(upstream, 'registration', `the registration endpoint ${endpoint} ${message}`);
  };
  // A server-side client keeps a secret where the server issues one; else it is public.
  const asked = secretMethod(server.tokenEndpointAuthMethods) ?? 'none';
  const answer = await upstreamRequest(
    { ...deps, upstream, step: 'registration' },
    'the registration endpoint',
    endpoint,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        ...clientMetadataOf(deps.publicUrl, upstream),
        token_endpoint_auth_method: asked,
      }),
    },
  );
  const body = answer.json;
  if (answer.status !== 201 && answer.status !== 200) {
    const code = isObject(body) && typeof body['error'] === 'string' ? body['error'] : undefined;
    const said = providerMessage(body);
    return fail(
      `refused the registration (HTTP ${answer.status}${code !== undefined && /^[a-z_]{1,40}$/.test(code) ? `, ${code}` : ''}${said && said !== code ? `: ${said}` : ''})`,
    );
  }
  if (
    !isObject(body) ||
    typeof body['client_id'] !== 'string' ||
    body['client_id'] === '' ||
    body['client_id'].length > 500
  )
    return fail('answered without a client_id');
  const method = body['token_endpoint_auth_method'] ?? asked;
  if (typeof method !== 'string' || !AUTH_METHODS.includes(method as RegisteredAuthMethod))
    return fail(
      `registered a client for token_endpoint_auth_method ${JSON.stringify(method)}, which the broker does not use`,
    );
  const secret = body['client_secret'];
  if (method !== 'none' && (typeof secret !== 'string' || secret === ''))
    return fail('issued no client_secret for a confidential client');
  const expires = body['client_secret_expires_at'];
  return {
    clientId: body['client_id'],
    clientSecret: new Secret(method === 'none' ? '' : (secret as string)),
    clientAuth: method as RegisteredAuthMethod,
    // RFC 7591 §3.2.1: seconds since the epoch, 0 for never.
    expiresAt: typeof expires === 'number' && expires > 0 ? new Date(expires * 1000) : undefined,
  };
}
