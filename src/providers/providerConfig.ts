import { z } from 'zod';
import type { ConformerName } from './conformers/registry.js';
import { checkUrl, UrlPolicyError } from '../security/urlPolicy.js';
import type { Secret } from '../shared/secret.js';
import { upstreamProvider, type UpstreamEntry } from './upstreamEntry.js';
import type { BrokerSelf } from './selfReference.js';
import { catalog } from './catalog/catalog.js';
import { type CatalogEntry, CatalogEntrySchema, CLIENT_ID_PLACEHOLDER } from './catalog/catalogEntry.js';
import { CatalogExpansionError, expandEntry, type ExpandedEntry } from './catalog/expandEntry.js';
import { providerId, scopeToken, SecretSchema, secretOf, type Env } from './entryFields.js';

/** One third-party OAuth provider the broker connects users to. */
export interface Provider {
  id: string;
  displayName: string;
  /** `oidc`: endpoints from the issuer's discovery document, an ID Token and a nonce. `oauth2`: explicit endpoints, neither. */
  kind: 'oidc' | 'oauth2';
  /** The issuer identifier: discovered from for `oidc`, compared with `iss` (RFC 9207) wherever it is known. */
  issuer: string | undefined;
  /** `oauth2`: read the endpoints from the issuer's RFC 8414 metadata (`oidc` always discovers). */
  metadataDiscovery: boolean;
  /** Explicit endpoints (`oauth2`); where endpoints are discovered, the hosts they must be on, when given. */
  authorizationEndpoint: string | undefined;
  tokenEndpoint: string | undefined;
  clientId: string;
  clientSecret: Secret;
  /** `none`: a public client (RFC 6749 §2.1), an upstream MCP server's Client ID Metadata Document or registration. */
  clientAuth: 'client_secret_basic' | 'client_secret_post' | 'none';
  pkce: boolean;
  scopes: string[];
  /** A granted scope → the scopes it includes (providers/scopes.ts). */
  impliedScopes: Readonly<Record<string, readonly string[]>>;
  scopeParam: 'scope' | 'user_scope';
  scopeSeparator: ' ' | ',';
  authorizeParams: Readonly<Record<string, string>>;
  tokenParams: Readonly<Record<string, string>>;
  conformer: ConformerName;
  /** Base URL of the provider's API (e.g. https://reports.example.com/api). */
  apiBase: string;
  apiHeaders: Readonly<Record<string, string>>;
  /** RFC 8707 resource indicator, sent only to providers that take it. */
  resource: string | undefined;
  /** The `aud` a JWT access token must carry; undefined where access tokens are opaque to the broker. */
  audience: string | undefined;
  /** Verified operations through this provider wait for an operator's approval. */
  highRisk: boolean;
  /** The catalog entry it was built from, if any. */
  catalog: string | undefined;
  /** How the broker learns who the user is at the provider, after the code exchange; `none`: it cannot (an upstream MCP server). */
  identity: CatalogEntry['identity'] | { from: 'none' };
  /** Connection facts asked for once after the code exchange (Atlassian's cloud id). */
  metadataCall: CatalogEntry['metadataCall'];
  /** A per-connection API base from the token response (Salesforce `instance_url`). */
  connectionApiBase: CatalogEntry['connectionApiBase'];
  /** RFC 7009 revocation endpoint, where the provider has one. */
  revocationEndpoint: string | undefined;
  /** The provider's own revocation call where it has no RFC 7009 endpoint (GitHub), its URL naming this deployment's client id. */
  revocationCall: CatalogEntry['revocationCall'];
  /** An answer besides HTTP 401 that means the token is dead (Slack's `invalid_auth` in HTTP 200). */
  deadTokenAnswer: CatalogEntry['deadTokenAnswer'];
  /** A remote MCP server behind the broker (src/upstream/): its endpoints and client are learnt on first use. */
  upstream?: UpstreamEntry;
}

/** What the deployment owns, beside the provider's own facts. */
const deploymentFields = {
  id: providerId,
  displayName: z.string().trim().min(1).max(80).optional(),
  clientId: z.string().min(1).max(200),
  clientSecret: SecretSchema,
  scopes: z.array(scopeToken).max(20).optional(),
  highRisk: z.boolean().default(false),
};

// The built-in Report Service's shape: an OIDC issuer whose access tokens are JWTs for `audience`.
const IssuerEntrySchema = z.strictObject({
  ...deploymentFields,
  displayName: z.string().trim().min(1).max(80),
  issuer: z.string(),
  scopes: z.array(scopeToken).min(1).max(20),
  apiBase: z.string(),
  audience: z.string(),
});

const CatalogRefSchema = z.strictObject({
  ...deploymentFields,
  catalog: z.string().min(1).max(40),
  /** Values of the catalog entry's template parameters (GitHub `host`, Entra `tenant`). */
  params: z.record(z.string(), z.string().max(200)).default({}),
});

export class ProviderConfigError extends Error {
  override name = 'ProviderConfigError';
}

/**
 * Validates provider entries (from PROVIDERS_FILE, or built in development)
 * at start. An entry names a catalog id (`catalog`), is a complete custom
 * entry (`kind` and the catalog fields), or is an OIDC issuer with a JWT
 * audience (the built-in shape). Checks the schema, unique ids, template
 * parameters, secrets named from the environment and the URL policy on every
 * URL; a rejected file stops start-up with every problem listed.
 */
export function parseProviders(
  entries: unknown,
  /** `self`: the broker's own origin and identity provider, which no upstream may be (src/upstream/selfReference.ts). */
  options: { allowLoopback: boolean; readEnv?: Env; self: BrokerSelf },
): Provider[] {
  if (!Array.isArray(entries))
    throw new ProviderConfigError('Invalid provider configuration: expected an array of providers');
  const env = options.readEnv ?? (() => undefined);
  const problems: string[] = [];
  const providers: Provider[] = [];
  const ids = new Set<string>();
  const prefixes = new Set<string>();
  for (const [index, entry] of entries.entries()) {
    const report = (list: readonly string[]) =>
      problems.push(
        ...list.map(
          (p) =>
            `[${index}]${typeof (entry as { id?: unknown })?.id === 'string' ? ` (${(entry as { id: string }).id})` : ''} ${p}`,
        ),
      );
    const result = parseEntry(entry, { allowLoopback: options.allowLoopback, env, self: options.self });
    if ('problems' in result) {
      report(result.problems);
      continue;
    }
    if (ids.has(result.provider.id)) report([`id: ${result.provider.id} is listed twice`]);
    ids.add(result.provider.id);
    const prefix = result.provider.upstream?.prefix;
    if (prefix !== undefined && prefixes.has(prefix)) report([`prefix: ${prefix} is another upstream's`]);
    if (prefix !== undefined) prefixes.add(prefix);
    providers.push(result.provider);
  }
  if (problems.length > 0)
    throw new ProviderConfigError(`Invalid provider configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return providers;
}

type Parsed = { provider: Provider } | { problems: string[] };

function issuesOf(error: z.ZodError): string[] {
  return error.issues.map((i) => `${i.path.join('.') || '(entry)'}: ${i.message}`);
}

function parseEntry(entry: unknown, options: { allowLoopback: boolean; env: Env; self: BrokerSelf }): Parsed {
  const shape = typeof entry === 'object' && entry !== null ? entry : {};
  if ('catalog' in shape) return fromCatalog(entry, options);
  if ('kind' in shape && shape.kind === 'mcp') return upstreamProvider(entry, options);
  if ('kind' in shape) return fromCustom(entry, options);
  return fromIssuer(entry, options);
}

function fromIssuer(entry: unknown, options: { allowLoopback: boolean; env: Env }): Parsed {
  const parsed = IssuerEntrySchema.safeParse(entry);
  if (!parsed.success) return { problems: issuesOf(parsed.error) };
  const e = parsed.data;
  const problems: string[] = [];
  for (const field of ['issuer', 'apiBase', 'audience'] as const) {
    try {
      checkUrl(e[field], { allowLoopback: options.allowLoopback }, `${e.id}.${field}`);
    } catch (err) {
      if (!(err instanceof UrlPolicyError)) throw err;
      problems.push(`${field}: ${err.message}`);
    }
  }
  const secret = secretOf(e.clientSecret, options.env, problems);
  if (problems.length > 0 || !secret) return { problems };
  return {
    provider: {
      id: e.id,
      displayName: e.displayName,
      kind: 'oidc',
      issuer: e.issuer.replace(/\/$/, ''),
      metadataDiscovery: false,
      authorizationEndpoint: undefined,
      tokenEndpoint: undefined,
      clientId: e.clientId,
      clientSecret: secret,
      // What openid-client sends when discovery names no method.
      clientAuth: 'client_secret_post',
      pkce: true,
      scopes: e.scopes,
      impliedScopes: {},
      scopeParam: 'scope',
      scopeSeparator: ' ',
      authorizeParams: {},
      tokenParams: {},
      conformer: 'standard',
      apiBase: e.apiBase,
      apiHeaders: {},
      resource: e.audience,
      audience: e.audience,
      highRisk: e.highRisk,
      catalog: undefined,
      identity: { from: 'idToken' },
      metadataCall: undefined,
      connectionApiBase: undefined,
      revocationEndpoint: undefined,
      revocationCall: undefined,
      deadTokenAnswer: undefined,
    },
  };
}

function fromCatalog(entry: unknown, options: { allowLoopback: boolean; env: Env }): Parsed {
  const parsed = CatalogRefSchema.safeParse(entry);
  if (!parsed.success) return { problems: issuesOf(parsed.error) };
  const e = parsed.data;
  const known = catalog.get(e.catalog);
  const problems: string[] = [];
  if (!known)
    problems.push(
      `catalog: ${JSON.stringify(e.catalog)} is not in the catalog (it has: ${[...catalog.keys()].join(', ')})`,
    );
  const secret = secretOf(e.clientSecret, options.env, problems);
  const expanded = known ? expandCollecting(() => expandEntry(known, e.params, options), problems) : undefined;
  if (problems.length > 0 || !secret || !expanded) return { problems };
  return { provider: toProvider(expanded, { ...e, clientSecret: secret, catalog: e.catalog }) };
}

function fromCustom(entry: unknown, options: { allowLoopback: boolean; env: Env }): Parsed {
  const shape = entry as Record<string, unknown>;
  const { clientId, clientSecret, scopes, highRisk, ...facts } = shape;
  const deployment = z.strictObject(deploymentFields).safeParse({
    id: shape['id'],
    clientId,
    clientSecret,
    scopes,
    highRisk,
    ...(shape['displayName'] !== undefined && { displayName: shape['displayName'] }),
  });
  const entrySchema = CatalogEntrySchema.safeParse(facts);
  const problems = [
    ...(deployment.success ? [] : issuesOf(deployment.error)),
    ...(entrySchema.success ? [] : issuesOf(entrySchema.error)),
  ];
  const secret = deployment.success ? secretOf(deployment.data.clientSecret, options.env, problems) : undefined;
  // A custom entry's parameters are declared in the entry itself: their defaults fill its templates.
  const expanded = entrySchema.success
    ? expandCollecting(() => expandEntry(entrySchema.data, {}, options), problems)
    : undefined;
  if (problems.length > 0 || !deployment.success || !secret || !expanded) return { problems };
  return { provider: toProvider(expanded, { ...deployment.data, clientSecret: secret, catalog: undefined }) };
}

function expandCollecting(expand: () => ExpandedEntry, problems: string[]): ExpandedEntry | undefined {
  try {
    return expand();
  } catch (err) {
    if (!(err instanceof CatalogExpansionError)) throw err;
    problems.push(...err.problems);
    return undefined;
  }
}

interface Deployment {
  id: string;
  displayName?: string | undefined;
  clientId: string;
  clientSecret: Secret;
  scopes?: string[] | undefined;
  highRisk: boolean;
  catalog: string | undefined;
}

function toProvider(entry: ExpandedEntry, d: Deployment): Provider {
  // JWT access tokens are checked for the API's audience; every other token is opaque to the broker.
  const audience = entry.accessTokenFormat === 'jwt' ? entry.apiBase : undefined;
  return {
    id: d.id,
    displayName: d.displayName ?? entry.displayName,
    kind: entry.kind,
    issuer: entry.issuer,
    metadataDiscovery: entry.metadataDiscovery,
    authorizationEndpoint: entry.authorizationEndpoint,
    tokenEndpoint: entry.tokenEndpoint,
    clientId: d.clientId,
    clientSecret: d.clientSecret,
    clientAuth: entry.clientAuth,
    pkce: entry.pkce,
    scopes: d.scopes ?? entry.defaultScopes,
    impliedScopes: entry.impliedScopes,
    scopeParam: entry.scopeParam,
    scopeSeparator: entry.scopeSeparator,
    authorizeParams: entry.authorizeParams,
    tokenParams: entry.tokenParams,
    conformer: entry.conformer,
    apiBase: entry.apiBase,
    apiHeaders: entry.apiHeaders,
    resource: entry.resourceIndicator ? entry.apiBase : undefined,
    audience,
    highRisk: d.highRisk,
    catalog: d.catalog,
    identity: entry.identity,
    metadataCall: entry.metadataCall,
    connectionApiBase: entry.connectionApiBase,
    revocationEndpoint: entry.revocationEndpoint,
    revocationCall: entry.revocationCall && {
      ...entry.revocationCall,
      // One path segment: a client id cannot reach another path or host.
      url: entry.revocationCall.url.replace(CLIENT_ID_PLACEHOLDER, encodeURIComponent(d.clientId)),
    },
    deadTokenAnswer: entry.deadTokenAnswer,
  };
}
