import { z } from 'zod';
import { providerId, scopeToken, SecretSchema, secretOf, type Env } from './entryFields.js';
import { checkUrl, UrlPolicyError } from '../security/urlPolicy.js';
import { Secret } from '../shared/secret.js';
import { canonicalResource } from '../shared/resource.js';
import { ownIssuerProblem, ownUrlProblem, type BrokerSelf } from './selfReference.js';

/** What a PROVIDERS_FILE entry of kind `mcp` says about its server, beside the fields every provider has. */
export interface UpstreamEntry {
  /** Where the broker sends MCP requests, and the server's resource identifier (RFC 9728, RFC 8707), canonical. */
  url: string;
  /** Its tools are served as `<prefix>_<tool>`. */
  prefix: string;
  /** `static`: the operator's pre-registered client; `auto`: a Client ID Metadata Document, else Dynamic Client Registration. */
  registration: 'auto' | 'static';
  /** The scopes the operator chose; undefined: the server's own (its challenge, else its metadata). */
  scopes: readonly string[] | undefined;
  /** The authorization server the operator binds it to (required with `static`); undefined: pinned on first use. */
  issuer: string | undefined;
}

// No underscore: it separates the prefix from the upstream's tool name.
const prefix = z
  .string()
  .max(24)
  .regex(
    /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/,
    'must be lower-case letters, digits and single hyphens, starting with a letter',
  );

const UpstreamEntrySchema = z
  .strictObject({
    id: providerId,
    kind: z.literal('mcp'),
    displayName: z.string().trim().min(1).max(80).optional(),
    url: z.string().max(2048),
    prefix,
    registration: z.enum(['auto', 'static']),
    clientId: z.string().min(1).max(200).optional(),
    // A pre-registered public client has none.
    clientSecret: SecretSchema.optional(),
    scopes: z.array(scopeToken).min(1).max(20).optional(),
    // Compared exactly with what discovery names (RFC 8414 §3.3): no normalisation.
    issuer: z.string().max(2048).optional(),
    highRisk: z.boolean().default(false),
  })
  .superRefine((e, ctx) => {
    // The spec's order puts a pre-registered client first: `static` names it, and `auto` must not
    // carry one it would never use.
    if (e.registration === 'static' && e.clientId === undefined)
      ctx.addIssue({ code: 'custom', path: ['clientId'], message: 'is required with registration: static' });
    // The client secret goes to the token endpoint: the operator names the server it belongs to,
    // so an upstream's metadata never chooses where it is sent.
    if (e.registration === 'static' && e.issuer === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['issuer'],
        message: 'is required with registration: static (the authorization server the client is registered at)',
      });
    if (e.registration === 'auto')
      for (const field of ['clientId', 'clientSecret'] as const)
        if (e[field] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: 'is for registration: static (auto registers the broker itself)',
          });
  });

/**
 * A PROVIDERS_FILE entry of kind `mcp` (a remote MCP server behind the broker), checked as start-up
 * checks every entry: the schema, the URL policy on its URL, a secret named from the environment;
 * every problem is returned, none thrown. The provider it yields holds what the file says; what
 * discovery and registration learn (the authorization server, its endpoints, an `auto` client) is
 * empty until upstreamClient.ts completes it on first use. Its account at the server is unknowable
 * (`identity: none`): MCP defines no way to ask it.
 */
export function upstreamProvider(entry: unknown, options: { allowLoopback: boolean; env: Env; self: BrokerSelf }) {
  const result = UpstreamEntrySchema.safeParse(entry);
  if (!result.success)
    return { problems: result.error.issues.map((i) => `${i.path.join('.') || '(entry)'}: ${i.message}`) };
  const e = result.data;
  const problems: string[] = [];
  let url: string | undefined;
  try {
    url = canonicalResource(checkUrl(e.url, { allowLoopback: options.allowLoopback }, `${e.id}.url`).href);
  } catch (err) {
    if (!(err instanceof UrlPolicyError)) throw err;
    problems.push(`url: ${err.message}`);
  }
  const ownUrl = url === undefined ? undefined : ownUrlProblem(url, options.self);
  if (ownUrl !== undefined) problems.push(`url: ${ownUrl}`);
  if (e.issuer !== undefined)
    try {
      checkUrl(e.issuer, { allowLoopback: options.allowLoopback }, `${e.id}.issuer`);
      const own = ownIssuerProblem(e.issuer, options.self);
      if (own !== undefined) problems.push(`issuer: ${own}`);
    } catch (err) {
      if (!(err instanceof UrlPolicyError)) throw err;
      problems.push(`issuer: ${err.message}`);
    }
  const secret = e.clientSecret === undefined ? undefined : secretOf(e.clientSecret, options.env, problems);
  if (problems.length > 0 || url === undefined) return { problems };
  const upstream: UpstreamEntry = {
    url,
    prefix: e.prefix,
    registration: e.registration,
    scopes: e.scopes,
    issuer: e.issuer,
  };
  // Typed by providerConfig.ts's Provider where it is returned (this module cannot import it: that
  // module imports this one).
  return {
    provider: {
      id: e.id,
      displayName: e.displayName ?? e.id,
      kind: 'oauth2' as const,
      issuer: undefined,
      metadataDiscovery: false,
      authorizationEndpoint: undefined,
      tokenEndpoint: undefined,
      clientId: e.clientId ?? '',
      clientSecret: secret ?? new Secret(''),
      clientAuth: secret === undefined ? ('none' as const) : ('client_secret_basic' as const),
      pkce: true,
      scopes: [...(e.scopes ?? [])],
      impliedScopes: {},
      scopeParam: 'scope' as const,
      scopeSeparator: ' ' as const,
      authorizeParams: {},
      tokenParams: {},
      conformer: 'standard' as const,
      apiBase: url,
      apiHeaders: {},
      // The MCP authorization spec: the resource indicator is the server's canonical URI, always sent.
      resource: url,
      audience: undefined,
      highRisk: e.highRisk,
      catalog: undefined,
      identity: { from: 'none' as const },
      metadataCall: undefined,
      connectionApiBase: undefined,
      revocationEndpoint: undefined,
      revocationCall: undefined,
      deadTokenAnswer: undefined,
      upstream,
    },
  };
}
