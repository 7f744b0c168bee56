import { isObject } from '../providers/conformers/responseFields.js';
import { sameResource } from '../shared/resource.js';
import { ownIssuerProblem, type BrokerSelf } from '../providers/selfReference.js';
import type { UpstreamEntry } from '../providers/upstreamEntry.js';
import { IssuerChangedError, UpstreamSetupError, type UpstreamStep } from '../errors/upstreamErrors.js';
import { policyChecked, upstreamRequest, type UpstreamAnswer, type UpstreamFetchDeps } from './upstreamFetch.js';
import { bearerParams } from './wwwAuthenticate.js';

// Authorization discovery as the MCP authorization spec (2026-07-28, "Authorization Server
// Discovery") describes it: the server's 401 and its WWW-Authenticate challenge, its Protected
// Resource Metadata (RFC 9728), then its authorization server's metadata (RFC 8414, OpenID Connect
// Discovery as the fallback). Each document is checked before anything is taken from it.

/** An authorization server's metadata, as far as the broker uses it; every URL in it passed the URL policy. */
export interface AuthorizationServer {
  issuer: string;
  /** Where the metadata was read. */
  metadataUrl: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  registrationEndpoint: string | undefined;
  revocationEndpoint: string | undefined;
  /** `client_id_metadata_document_supported` (the MCP authorization spec, "Client Registration"). */
  clientIdMetadataDocuments: boolean;
  /** RFC 8414 §2 `token_endpoint_auth_methods_supported`, its default when absent. */
  tokenEndpointAuthMethods: readonly string[];
  /** The checked members only, for the OAuth client (oauthClient.ts): no URL the policy did not see. */
  metadata: Readonly<Record<string, unknown>> & { issuer: string };
}

export interface UpstreamDiscovery {
  /** The resource the metadata names: the upstream's URL, the RFC 8707 resource indicator. */
  resource: string;
  resourceMetadataUrl: string;
  /** The challenge's `scope`: authoritative for the first authorization (the spec's "Scope Selection Strategy"). */
  challengedScopes: string[] | undefined;
  /** The metadata's `scopes_supported`. */
  scopesSupported: string[] | undefined;
  authorizationServer: AuthorizationServer;
}

const PRM_SUFFIX = '/.well-known/oauth-protected-resource';
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * Discovers how `upstream` is authorized; throws UpstreamSetupError naming the step and the reason.
 * With `pinned` (the issuer the upstream is bound to), a metadata document that does not list it
 * throws IssuerChangedError before any request reaches the server it names instead. An
 * authorization server that is the broker's own (`self`: its identity provider or its origin) is
 * refused before it is asked anything.
 */
export async function discoverUpstream(
  id: string,
  upstream: UpstreamEntry,
  deps: UpstreamFetchDeps,
  options: { pinned?: string | undefined; self: BrokerSelf },
): Promise<UpstreamDiscovery> {
  const { pinned, self } = options;
  const at = (step: UpstreamStep) => ({ ...deps, upstream: id, step });
  const fail = (step: UpstreamStep, message: string): never => {
    throw new UpstreamSetupError(id, step, message);
  };

  // 1. An MCP request without a token: a protected server answers 401 with a Bearer challenge.
  const challenge = await upstreamRequest(at('challenge'), 'the MCP server', upstream.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'server/discover',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover' }),
  });
  if (challenge.status !== 401)
    fail(
      'challenge',
      challenge.status < 300
        ? `the MCP server ${upstream.url} answered HTTP ${challenge.status} to a request without a token: it asks for no authorization`
        : `the MCP server ${upstream.url} answered HTTP ${challenge.status} to a request without a token, not 401`,
    );
  const params = bearerParams(challenge.headers.get('www-authenticate'));
  const challengedScopes = params
    ?.get('scope')
    ?.split(' ')
    .filter((s) => SCOPE_TOKEN.test(s));

  // 2. The metadata the challenge names; without one, the well-known URIs, path-inserted first (RFC 9728 §3.1).
  const named = params?.get('resource_metadata');
  const candidates = named !== undefined ? [named] : wellKnownResourceMetadata(upstream.url);
  const found = await firstDocument(at('resource_metadata'), 'the protected resource metadata', candidates);
  const prm = found.json;
  // RFC 9728 §3.3: a document for another resource is not used, however it was found.
  if (typeof prm['resource'] !== 'string' || !sameResource(prm['resource'], upstream.url))
    fail(
      'resource_metadata',
      `${found.url} names the resource ${JSON.stringify(prm['resource'])}, not ${upstream.url}; the entry's url must be the server's resource identifier`,
    );
  const servers = prm['authorization_servers'];
  if (!Array.isArray(servers) || servers.length === 0 || !servers.every((s) => typeof s === 'string'))
    fail('resource_metadata', `${found.url} names no authorization_servers`);
  const scopesSupported = scopeList(prm['scopes_supported']);
  if (scopesSupported === null)
    fail('resource_metadata', `${found.url} has a scopes_supported that is not a list of scopes`);

  // 3. The pinned server where it is listed, else the first it names (RFC 9728 §7.6 leaves the choice
  // to the client); one that is not the pinned one is never asked anything.
  const listed = servers as string[];
  if (pinned !== undefined && !listed.includes(pinned)) throw new IssuerChangedError(id, pinned, listed[0]!);
  const chosen = pinned ?? listed[0]!;
  const own = ownIssuerProblem(chosen, self);
  if (own !== undefined) fail('resource_metadata', `${found.url} names ${own}`);
  const authorizationServer = await discoverAuthorizationServer(at('authorization_server'), chosen);
  return {
    resource: upstream.url,
    resourceMetadataUrl: found.url,
    challengedScopes: challengedScopes?.length ? challengedScopes : undefined,
    scopesSupported: scopesSupported ?? undefined,
    authorizationServer,
  };
}

/** RFC 9728 §3.1 and the MCP spec: `/.well-known/oauth-protected-resource` inserted before the path, then at the root. */
export function wellKnownResourceMetadata(resource: string): string[] {
  const url = new URL(resource);
  const path = url.pathname.replace(/\/$/, '');
  const root = `${url.origin}${PRM_SUFFIX}`;
  return path === '' && url.search === '' ? [root] : [`${url.origin}${PRM_SUFFIX}${path}${url.search}`, root];
}

/** RFC 8414 §3.1 and its §5 compatibility with OpenID Connect Discovery, in the MCP spec's order. */
export function authorizationServerMetadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/$/, '');
  if (path === '')
    return [`${url.origin}/.well-known/oauth-authorization-server`, `${url.origin}/.well-known/openid-configuration`];
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

async function discoverAuthorizationServer(
  deps: UpstreamFetchDeps & { upstream: string; step: UpstreamStep },
  issuer: string,
): Promise<AuthorizationServer> {
  const fail = (message: string): never => {
    throw new UpstreamSetupError(deps.upstream, deps.step, message);
  };
  // The issuer passes the policy before any well-known URL is built from it.
  policyChecked(deps, 'the authorization server issuer', issuer);
  const found = await firstDocument(deps, 'the authorization server metadata', authorizationServerMetadataUrls(issuer));
  const m = found.json;
  // RFC 8414 §3.3, OpenID Connect Discovery §4.3: the issuer is compared exactly, no normalisation.
  if (m['issuer'] !== issuer) fail(`${found.url} names the issuer ${JSON.stringify(m['issuer'])}, not ${issuer}`);
  const endpoint = (member: string, required: boolean): string | undefined => {
    const value = m[member];
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string') return fail(`${found.url} has no ${member}`);
    return value;
  };
  const authorizationEndpoint = endpoint('authorization_endpoint', true)!;
  const tokenEndpoint = endpoint('token_endpoint', true)!;
  const registrationEndpoint = endpoint('registration_endpoint', false);
  const revocationEndpoint = endpoint('revocation_endpoint', false);
  const endpoints = { authorizationEndpoint, tokenEndpoint, registrationEndpoint, revocationEndpoint };
  for (const [name, url] of Object.entries(endpoints))
    if (url !== undefined) policyChecked(deps, `the ${issuer} ${name}`, url);
  // The MCP spec ("Authorization Code Protection"): without S256 in the metadata the client must not proceed.
  const challenges = m['code_challenge_methods_supported'];
  if (!Array.isArray(challenges) || !challenges.includes('S256'))
    fail(`${found.url} does not list S256 in code_challenge_methods_supported, so PKCE cannot be relied on`);
  const methods = m['token_endpoint_auth_methods_supported'];
  const tokenEndpointAuthMethods =
    Array.isArray(methods) && methods.every((x) => typeof x === 'string') ? methods : ['client_secret_basic'];
  const issParameter = m['authorization_response_iss_parameter_supported'] === true;
  return {
    issuer,
    metadataUrl: found.url,
    authorizationEndpoint,
    tokenEndpoint,
    registrationEndpoint,
    revocationEndpoint,
    clientIdMetadataDocuments: m['client_id_metadata_document_supported'] === true,
    tokenEndpointAuthMethods,
    metadata: {
      issuer,
      authorization_endpoint: authorizationEndpoint,
      token_endpoint: tokenEndpoint,
      ...(revocationEndpoint !== undefined && { revocation_endpoint: revocationEndpoint }),
      code_challenge_methods_supported: challenges as string[],
      token_endpoint_auth_methods_supported: tokenEndpointAuthMethods,
      // RFC 9207 §2.4 as the MCP spec's table reads it: required back only where advertised.
      ...(issParameter && { authorization_response_iss_parameter_supported: true }),
    },
  };
}

/** The first candidate answering 200 with a JSON object; each other answer is kept for the error. */
async function firstDocument(
  deps: UpstreamFetchDeps & { upstream: string; step: UpstreamStep },
  what: string,
  urls: readonly string[],
): Promise<{ url: string; json: Record<string, unknown> }> {
  const tried: string[] = [];
  for (const url of urls) {
    let answer: UpstreamAnswer;
    try {
      answer = await upstreamRequest(deps, what, url, { headers: { accept: 'application/json' } });
    } catch (err) {
      // A URL the policy refuses, or one that cannot be reached, ends the search only when it is the last.
      if (!(err instanceof UpstreamSetupError) || urls.length === 1) throw err;
      tried.push(err.message.replace(/^Upstream [^:]+: /, ''));
      continue;
    }
    if (answer.status === 200 && isObject(answer.json)) return { url, json: answer.json };
    tried.push(`${url} answered HTTP ${answer.status}${answer.status === 200 ? ' without a JSON object' : ''}`);
  }
  throw new UpstreamSetupError(deps.upstream, deps.step, `${what} could not be read: ${tried.join('; ')}`);
}

/** A list of scope tokens, undefined when absent, null when malformed. */
function scopeList(value: unknown): string[] | undefined | null {
  if (value === undefined) return undefined;
  return Array.isArray(value) && value.every((s) => typeof s === 'string' && SCOPE_TOKEN.test(s)) ? value : null;
}
