import { z } from 'zod';
import { SAFE_PATTERN_RULE, safePattern, type SafePattern, UnsafePatternError } from '../../security/safePattern.js';
// The catalog only names a token-response conformer; the one table of them is the registry.
import { conformerNames } from '../conformers/registry.js';

// A catalog entry says how one provider speaks OAuth: what the broker needs
// to run the authorization code flow against it and call its API. It is
// written from the provider's own documentation (cited in `docs`) and holds
// no deployment data: client credentials, chosen scopes and template values
// come from the operator's PROVIDERS_FILE. URLs may hold `{param}`
// placeholders, filled by expandEntry() from declared `params` and `derived`.

/** The placeholder syntax inside URL templates. */
export const PLACEHOLDER = /\{([A-Za-z][A-Za-z0-9]*)\}/g;

/** A DNS host name or IP address, lower case, with an optional port: what a `host` parameter may hold. */
export const HOST_PATTERN = '[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?';

const paramName = z.string().regex(/^[A-Za-z][A-Za-z0-9]*$/, 'must be a plain identifier');
const urlTemplate = z.string().min(9).max(500);
// A member path into a JSON answer: `id`, `authed_user.id`, `data.viewer.id`.
const memberPath = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/, 'must be a dotted member path');
// The same, where a segment may also be an array index: `0.id` (Atlassian's accessible resources).
const indexedPath = z
  .string()
  .regex(
    /^([A-Za-z_][A-Za-z0-9_]*|[0-9]{1,2})(\.([A-Za-z_][A-Za-z0-9_]*|[0-9]{1,2}))*$/,
    'must be a dotted member path',
  );
// RFC 6749 §3.3 scope-token characters.
const scopeToken = z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be an RFC 6749 scope token');
const queryParams = z.record(z.string().regex(/^[a-z_]+$/), z.string().min(1).max(200));

const ParamSchema = z.strictObject({
  description: z.string().min(1).max(200),
  /** Regular expression the whole value must match (anchored by expandEntry). */
  pattern: z.string().min(1),
  default: z.string().optional(),
});

// A value chosen by the catalog from the operator's parameters, for layouts
// that differ by more than a placeholder (GitHub's API host). The first case
// whose `when` values all equal the given parameters wins.
const DerivedSchema = z.strictObject({
  cases: z.array(z.strictObject({ when: z.record(paramName, z.string()), value: urlTemplate })).min(1),
  otherwise: urlTemplate,
});

// Who the user is at the provider: the ID token's `sub` (OpenID Connect Core
// §2), a member of the raw token response, or an API call made with the new
// access token.
const IdentitySchema = z.discriminatedUnion('from', [
  z.strictObject({ from: z.literal('idToken') }),
  z.strictObject({ from: z.literal('tokenResponse'), subjectPath: memberPath, namePath: memberPath.optional() }),
  z.strictObject({
    from: z.literal('call'),
    method: z.enum(['GET', 'POST']),
    url: urlTemplate,
    /** JSON request body, for APIs that answer identity only to a POST (GraphQL). */
    body: z.record(z.string(), z.string()).optional(),
    subjectPath: memberPath,
    /** The account's human-readable name (GitHub `login`), kept beside the subject. */
    namePath: memberPath.optional(),
  }),
]);

// A call made once after the code exchange, with the new access token, for
// connection facts the token response lacks (Atlassian's cloud id): each
// field names a path into its JSON answer.
const MetadataCallSchema = z.strictObject({
  url: urlTemplate,
  fields: z.record(paramName, indexedPath).refine((f) => Object.keys(f).length > 0, 'must name at least one field'),
});

// A per-connection API base returned in the token response (Salesforce's
// `instance_url`): it replaces `apiBase` for that connection once it passes the
// URL policy and ends with one of the listed host suffixes.
const ConnectionApiBaseSchema = z.strictObject({
  tokenResponsePath: memberPath,
  allowedHostSuffixes: z.array(z.string().regex(/^\.[a-z0-9.-]+$/, 'must start with a dot')).min(1),
});

// An API answer that means the stored token is dead although its status is
// not 401 (Slack: HTTP 200 `{"ok": false, "error": "invalid_auth"}`): the
// member at `errorPath` of a JSON body holding one of `values`.
const DeadTokenAnswerSchema = z.strictObject({
  errorPath: memberPath,
  values: z
    .array(z.string().regex(/^[a-z_]{1,64}$/))
    .min(1)
    .max(20),
});

/** The one deployment value a catalog URL may name: the operator's client id (filled in by providerConfig.ts). */
export const CLIENT_ID_PLACEHOLDER = '{clientId}';

// A provider's own revocation call where it has no RFC 7009 endpoint (GitHub's "Delete an app
// token", DELETE /applications/{client_id}/token): the client authenticates with HTTP Basic (its
// id and secret), and the access token travels as one member of a JSON body. The URL may name
// `{clientId}`.
const RevocationCallSchema = z.strictObject({
  method: z.enum(['DELETE', 'POST']),
  url: urlTemplate,
  tokenMember: z.string().regex(/^[a-z_]{1,40}$/, 'must be a plain member name'),
});

export const CatalogEntrySchema = z
  .strictObject({
    id: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a short lower-case identifier'),
    displayName: z.string().trim().min(1).max(80),
    kind: z.enum(['oauth2', 'oidc']),
    /** The provider's own page the entry was written from. */
    docs: z.url({ protocol: /^https$/ }),
    params: z.record(paramName, ParamSchema).default({}),
    derived: z.record(paramName, DerivedSchema).optional(),
    /**
     * The issuer identifier. `oidc`: discovery and `iss` checks. `oauth2`: the
     * RFC 8414 issuer identifier, then required as `iss` in every authorization
     * response (RFC 9207); absent where the provider publishes none (GitHub).
     */
    issuer: urlTemplate.optional(),
    authorizationEndpoint: urlTemplate,
    tokenEndpoint: urlTemplate,
    /**
     * `oauth2` with an issuer: the endpoints come from its RFC 8414 metadata,
     * each on the host of the endpoint written here. (`oidc` entries always
     * discover, OpenID Connect Discovery 1.0.)
     */
    metadataDiscovery: z.boolean().default(false),
    /** An RFC 7009 endpoint (form-encoded `token`, client authenticated); absent where the provider has none. */
    revocationEndpoint: urlTemplate.optional(),
    /** The provider's own revocation call, where it has no RFC 7009 endpoint. */
    revocationCall: RevocationCallSchema.optional(),
    identity: IdentitySchema,
    clientAuth: z.enum(['client_secret_basic', 'client_secret_post']),
    pkce: z.boolean(),
    /** Fixed extra parameters of the authorization request (Google `access_type`). */
    authorizeParams: queryParams.default({}),
    /** Fixed extra parameters of the token request. */
    tokenParams: queryParams.default({}),
    /** The authorization-request parameter that carries scopes (Slack user tokens: `user_scope`). */
    scopeParam: z.enum(['scope', 'user_scope']).default('scope'),
    scopeSeparator: z.enum([' ', ',']).default(' '),
    defaultScopes: z.array(scopeToken).max(20).default([]),
    /**
     * A granted scope → the scopes it includes, from the provider's scope documentation (GitHub's `repo`
     * includes `public_repo`), or the name the provider reports a requested scope under (Google reports
     * `email` as its URL). Listed in full: what a scope includes is not followed through another entry.
     */
    impliedScopes: z.record(scopeToken, z.array(scopeToken).min(1).max(40)).default({}),
    /** Whether the provider takes the RFC 8707 `resource` parameter (Microsoft Entra refuses it). */
    resourceIndicator: z.boolean().default(false),
    conformer: z.enum(conformerNames).default('standard'),
    apiBase: urlTemplate,
    connectionApiBase: ConnectionApiBaseSchema.optional(),
    metadataCall: MetadataCallSchema.optional(),
    /** Headers sent on every API call (API version pins). */
    apiHeaders: z.record(z.string().regex(/^[A-Za-z][A-Za-z0-9-]*$/), z.string().min(1).max(200)).default({}),
    /** Answers besides HTTP 401 that mean the token is dead: the connection is forgotten and the user asked again. */
    deadTokenAnswer: DeadTokenAnswerSchema.optional(),
    /** `jwt` only where access tokens are JWTs meant for an audience check; otherwise the broker treats them as opaque. */
    accessTokenFormat: z.enum(['opaque', 'jwt']).default('opaque'),
  })
  .superRefine((entry, ctx) => {
    const problem = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const derived = entry.derived ?? {};
    for (const [name, param] of Object.entries(entry.params)) {
      let pattern: SafePattern | undefined;
      try {
        pattern = anchored(param.pattern);
      } catch (err) {
        if (!(err instanceof UnsafePatternError)) throw err;
        problem(['params', name, 'pattern'], `must be ${SAFE_PATTERN_RULE} (${err.message})`);
      }
      if (pattern && param.default !== undefined && !pattern.test(param.default))
        problem(['params', name, 'default'], 'does not match its own pattern');
      if (name in derived) problem(['derived', name], 'has the name of a parameter');
    }
    for (const [name, rule] of Object.entries(derived)) {
      rule.cases.forEach((c, i) => {
        for (const key of Object.keys(c.when))
          if (!(key in entry.params))
            problem(['derived', name, 'cases', i, 'when', key], 'is not a declared parameter');
        // Derived values use parameters only, so one pass resolves them all.
        for (const ref of placeholders(c.value))
          if (!(ref in entry.params)) problem(['derived', name, 'cases', i, 'value'], `uses undeclared {${ref}}`);
      });
      for (const ref of placeholders(rule.otherwise))
        if (!(ref in entry.params)) problem(['derived', name, 'otherwise'], `uses undeclared {${ref}}`);
    }
    for (const [field, template] of urlTemplates(entry)) {
      for (const ref of placeholders(template))
        if (!(ref in entry.params) && !(ref in derived) && !clientIdAllowed(field, ref))
          problem(field.split('.'), `uses undeclared {${ref}}`);
    }
    if (entry.revocationEndpoint !== undefined && entry.revocationCall !== undefined)
      problem(['revocationCall'], 'is for providers without an RFC 7009 revocationEndpoint');
    if (entry.kind === 'oidc' && entry.issuer === undefined) problem(['issuer'], 'is required for an oidc entry');
    if (entry.metadataDiscovery && (entry.kind !== 'oauth2' || entry.issuer === undefined))
      problem(['metadataDiscovery'], 'needs an oauth2 entry with an issuer');
    if (entry.identity.from === 'idToken' && entry.kind !== 'oidc')
      problem(['identity'], 'an ID token exists only for an oidc entry');
  });

/** An entry as the catalog uses it, defaults filled. */
export type CatalogEntry = z.output<typeof CatalogEntrySchema>;
/** An entry as a provider file writes it: only what differs from the defaults, except client authentication and PKCE, which every entry states. */
export type CatalogEntryInput = z.input<typeof CatalogEntrySchema>;

/** Every URL template of an entry, named by its field path. */
export function urlTemplates(entry: CatalogEntry): [string, string][] {
  const fields: [string, string | undefined][] = [
    ['issuer', entry.issuer],
    ['authorizationEndpoint', entry.authorizationEndpoint],
    ['tokenEndpoint', entry.tokenEndpoint],
    ['revocationEndpoint', entry.revocationEndpoint],
    ['revocationCall.url', entry.revocationCall?.url],
    ['identity.url', entry.identity.from === 'call' ? entry.identity.url : undefined],
    ['metadataCall.url', entry.metadataCall?.url],
    ['apiBase', entry.apiBase],
  ];
  return fields.filter((f): f is [string, string] => f[1] !== undefined);
}

// Only the revocation call is made with the client's credentials, so only it may name the client id.
const clientIdAllowed = (field: string, ref: string): boolean =>
  field === 'revocationCall.url' && `{${ref}}` === CLIENT_ID_PLACEHOLDER;

export function placeholders(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/** The whole value must match; run on RE2, as every pattern the code did not write (src/security/safePattern.ts). */
export function anchored(pattern: string): SafePattern {
  return safePattern(`^(?:${pattern})$`, false);
}
