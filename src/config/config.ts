import { z } from 'zod';
import { signingKeyOf } from '../crypto/webhookSignature.js';
import { checkUrl, UrlPolicyError } from '../security/urlPolicy.js';
import { NON_PRODUCTION_EGRESS_ALLOW, parseEgressAllow, type EgressAllow } from '../security/egressAllow.js';
import { FAULT_POINTS, type FaultPoint } from '../shared/faultPoints.js';
import { parseTrustProxy, TRUST_NO_PROXY, TrustProxyError, type ProxyTrust } from '../shared/clientAddress.js';
import { Secret } from '../shared/secret.js';
import type { TracingSettings } from '../telemetry/tracing.js';
import { DEFAULT_QUOTAS, type Quotas, type LegacyLimits, type RateLimit } from './limits.js';

/** Where the broker keeps its files when DATA_DIR is not set. */
export const DEFAULT_DATA_DIR = '.data';

const modes = ['development', 'production', 'test'] as const;
export type Mode = (typeof modes)[number];

const port = z.coerce.number().int().min(0).max(65535);
const httpsUrl = z.url({ protocol: /^https$/, error: 'must be an https:// URL' });
const optionalString = z.string().trim().min(1).optional();
const otlpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });
/** OIDC_CLIENT_ID's default: the development identity provider's client. */
const SIGN_IN_CLIENT_ID = 'connect-broker';

// SECRET_KEYS="kid1:<base64url 32 bytes>,kid0:<…>" — the first is active, the rest decrypt old data.
const secretKeys = z
  .string()
  .trim()
  .transform((value, ctx) => {
    const keys = value.split(',').map((entry) => {
      const [kid, material] = entry.trim().split(':');
      const bytes = Buffer.from(material ?? '', 'base64url');
      if (!kid || !/^[A-Za-z0-9_-]{1,32}$/.test(kid) || bytes.length !== 32) return undefined;
      return { kid, key: new Secret(material ?? '') };
    });
    if (keys.some((k) => k === undefined)) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be comma-separated kid:key pairs, each key 32 bytes in base64url',
      });
      return z.NEVER;
    }
    // A sealed value names its key by id only: with one id twice, what the first key sealed would be
    // opened with the second one, and fail.
    const parsed = keys.filter((k) => k !== undefined);
    const kids = parsed.map((k) => k.kid);
    const repeated = [...new Set(kids.filter((kid, i) => kids.indexOf(kid) !== i))];
    if (repeated.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `names key id ${repeated.join(', ')} more than once; each key needs an id of its own`,
      });
      return z.NEVER;
    }
    return parsed;
  });

// A webhook signing key (Standard Webhooks): whsec_ and base64, or a raw secret of 32 characters or more.
const webhookSecret = z
  .string()
  .trim()
  .refine((v) => v.length >= 32, 'must be at least 32 characters')
  .refine(
    (v) => v.length < 32 || signingKeyOf(v) !== undefined,
    'must be whsec_ and the base64 of 24 to 64 bytes, or not start with whsec_',
  )
  .optional();

const envSchema = z
  .object({
    NODE_ENV: z.enum(modes).default('development'),
    HOST: z.string().trim().min(1).default('127.0.0.1'),
    PORT: port.default(8443),
    PUBLIC_URL: httpsUrl.optional(),
    DATA_DIR: z.string().trim().min(1).default(DEFAULT_DATA_DIR),
    DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' }).optional(),
    DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
    // A direct connection for what needs one Postgres session (LISTEN, the migrations' advisory
    // lock) when DATABASE_URL goes through a transaction-mode pooler such as PgBouncer.
    DATABASE_DIRECT_URL: z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' }).optional(),
    OIDC_ISSUER: httpsUrl.optional(),
    OIDC_CLIENT_ID: optionalString,
    OIDC_CLIENT_SECRET: optionalString,
    SECRET_KEYS: secretKeys.optional(),
    TLS_CERT_FILE: optionalString,
    TLS_KEY_FILE: optionalString,
    TLS_CA_FILE: optionalString,
    // A proxy in front holds the certificate and speaks plain HTTP to the broker (production only, below).
    TLS_TERMINATED_BY_PROXY: z.enum(['true', 'false']).default('false'),
    // The peers whose X-Forwarded-For names the client (shared/clientAddress.ts); unset, none.
    TRUST_PROXY: z
      .string()
      .optional()
      .transform((value, ctx) => {
        try {
          return parseTrustProxy(value);
        } catch (err) {
          if (!(err instanceof TrustProxyError)) throw err;
          ctx.addIssue({ code: 'custom', message: err.message });
          return z.NEVER;
        }
      }),
    DEV_IDP_PORT: port.optional(),
    DEV_REPORTS_PORT: port.optional(),
    DEV_GITHUB_PORT: port.optional(),
    DEV_UPSTREAM_PORT: port.optional(),
    // Development mode serves an identity provider with known passwords: off loopback only when asked by name.
    DEV_ALLOW_NETWORK: z.enum(['true', 'false']).optional(),
    // The release-gates suite's form tool whose form asks for a password (dev/devSecretFormTool.ts).
    DEV_SECRET_FORM_TOOL: z.enum(['true', 'false']).optional(),
    PROVIDERS_FILE: optionalString,
    NAVIGATION_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .max(24 * 3600)
      .default(900),
    RETRY_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(10_000),
    SWEEP_INTERVAL_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
    PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    // Internal services the broker may connect to (security/egressAllow.ts); unset outside production, loopback.
    EGRESS_ALLOW: optionalString,
    LEGACY_URL_ELICITATION: z.enum(['nested', 'error']).default('nested'),
    LEGACY_WAIT_MS: z.coerce
      .number()
      .int()
      .min(1_000)
      .max(30 * 60_000)
      .default(5 * 60_000),
    LEGACY_RETRY_WINDOW_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(24 * 3600)
      .default(600),
    LEGACY_MAX_SESSIONS: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
    LEGACY_MAX_SESSIONS_PER_PRINCIPAL: z.coerce.number().int().min(1).max(10_000).default(20),
    LEGACY_SESSION_IDLE_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .max(7 * 24 * 3600)
      .default(30 * 60),
    LEGACY_STREAM_HEARTBEAT_SECONDS: z.coerce.number().int().min(1).max(600).default(15),
    LEGACY_STREAM_MAX_SECONDS: z.coerce
      .number()
      .int()
      .min(10)
      .max(24 * 3600)
      .default(10 * 60),
    LEGACY_WATCHERS_PER_SESSION: z.coerce.number().int().min(1).max(1_000).default(10),
    // GET /login and its callback, per client address and per instance (a token bucket).
    LOGIN_RATE_BURST: z.coerce.number().int().min(1).max(100_000).default(60),
    LOGIN_RATE_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(60),
    MCP_SCOPE: z
      .string()
      .trim()
      .regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be one scope token')
      .default('mcp'),
    // The scope hosts are told to ask for (Protected Resource Metadata, the challenge), where the identity
    // provider names it otherwise than its tokens carry it (Entra ID: api://…/mcp asked, mcp in `scp`).
    MCP_ADVERTISED_SCOPE: z
      .string()
      .trim()
      .regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be one scope token')
      .optional(),
    // The audience MCP tokens carry where the identity provider cannot write the resource URL (Entra ID's
    // v2 tokens carry the API's client id); unset, the resource URL (RFC 8707).
    MCP_TOKEN_AUDIENCE: z
      .string()
      .trim()
      .regex(/^[\x21-\x7e]{1,400}$/, 'must be one audience value, printable ASCII without spaces')
      .optional(),
    // jwt: access tokens whose `typ` is JWT pass too, on conditions (security/accessTokenPolicy.ts).
    MCP_TOKEN_TYP: z.enum(['at+jwt', 'jwt']).default('at+jwt'),
    MCP_ALLOW_ANONYMOUS: z.enum(['true', 'false']).default('false'),
    SESSION_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 24 * 3600)
      .default(8 * 3600),
    SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(120_000).default(10_000),
    OPERATOR_ROLE_CLAIM: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9_:/.-]{1,200}$/, 'must be a claim name, dotted for nested claims (realm_access.roles)')
      .default('roles'),
    OPERATOR_ROLE: z.string().trim().min(1).max(200).default('operator'),
    BROKER_OPERATOR_TOKEN: optionalString,
    QUOTA_NAVIGATIONS_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_QUOTAS.navigationsPerHour),
    QUOTA_OPEN_PER_PROVIDER: z.coerce.number().int().min(1).max(1_000).default(DEFAULT_QUOTAS.openPerProvider),
    QUOTA_WAITS_PER_PRINCIPAL: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_QUOTAS.waitsPerPrincipal),
    QUOTA_REFUSALS_PER_FLOW: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_QUOTAS.refusalsPerFlow),
    HIGH_RISK_TOOLS: z
      .string()
      .trim()
      .regex(/^[a-z0-9_]+(\s*,\s*[a-z0-9_]+)*$/, 'must be a comma-separated list of tool names')
      .optional(),
    // Modules whose defineConnectionTool exports are served beside the built-in tools (comma-separated paths).
    TOOL_MODULES: z.string().trim().optional(),
    // Tools declared in a YAML or JSON file (mcp/declared/toolsFile.ts), served beside the others.
    TOOLS_FILE: optionalString,
    // Bearer token for GET /metrics; header-safe characters, long enough not to be guessed.
    METRICS_TOKEN: z
      .string()
      .trim()
      .min(32, 'must be at least 32 characters')
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
      .optional(),
    // Where the broker posts its events (src/events/), and the key that signs them (Standard Webhooks).
    WEBHOOK_URL: optionalString, // through the URL policy below
    WEBHOOK_SECRET: webhookSecret,
    // The secret WEBHOOK_SECRET replaces, while receivers move to the new one: deliveries carry both signatures.
    WEBHOOK_SECRET_PREVIOUS: webhookSecret,
    // The faults suite's crash point (shared/faultPoints.ts); refused in production below.
    BROKER_FAULT_POINT: z.enum(FAULT_POINTS).optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    // Tracing (src/telemetry/), under OpenTelemetry's own names: on only when an endpoint is set.
    OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl.optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl.optional(),
    OTEL_EXPORTER_OTLP_HEADERS: z
      .string()
      .trim()
      .regex(/^[^=,\s]+=[^,]+(,\s*[^=,\s]+=[^,]+)*$/, 'must be comma-separated key=value pairs')
      .optional(),
    OTEL_SERVICE_NAME: z.string().trim().min(1).max(200).default('connect-broker'),
    OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  })
  // Production never falls back to anything generated or embedded: every
  // trust anchor and key must be given explicitly.
  .superRefine(
    (env, ctx) => {
      // A legacy session is idle only between requests: a nested call waits up to twice LEGACY_WAIT_MS
      // (the elicitation answer, then the callback) and a client listening on its GET stream reconnects
      // every LEGACY_STREAM_MAX_SECONDS, so a shorter idle limit would end sessions that are in use.
      const idleMs = env.LEGACY_SESSION_IDLE_SECONDS * 1000;
      if (idleMs <= 2 * env.LEGACY_WAIT_MS || idleMs <= env.LEGACY_STREAM_MAX_SECONDS * 1000) {
        ctx.addIssue({
          code: 'custom',
          path: ['LEGACY_SESSION_IDLE_SECONDS'],
          message: 'must be longer than twice LEGACY_WAIT_MS and longer than LEGACY_STREAM_MAX_SECONDS',
        });
      }
      if (env.DATABASE_DIRECT_URL !== undefined && env.DATABASE_URL === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['DATABASE_DIRECT_URL'],
          message: 'needs DATABASE_URL (the pooler it bypasses); the embedded Postgres needs neither',
        });
      }
      // A webhook is both its URL and its key, or neither; its URL passes the policy of every URL the
      // broker calls, so loopback only outside production.
      if ((env.WEBHOOK_URL === undefined) !== (env.WEBHOOK_SECRET === undefined)) {
        const [missing, given] =
          env.WEBHOOK_URL === undefined ? ['WEBHOOK_URL', 'WEBHOOK_SECRET'] : ['WEBHOOK_SECRET', 'WEBHOOK_URL'];
        ctx.addIssue({ code: 'custom', path: [missing], message: `is required with ${given}` });
      }
      if (env.WEBHOOK_SECRET_PREVIOUS !== undefined && env.WEBHOOK_SECRET === undefined)
        ctx.addIssue({ code: 'custom', path: ['WEBHOOK_SECRET'], message: 'is required with WEBHOOK_SECRET_PREVIOUS' });
      if (env.WEBHOOK_SECRET_PREVIOUS !== undefined && env.WEBHOOK_SECRET_PREVIOUS === env.WEBHOOK_SECRET)
        ctx.addIssue({ code: 'custom', path: ['WEBHOOK_SECRET_PREVIOUS'], message: 'is WEBHOOK_SECRET itself' });
      // Spans name tools, providers and flows, and the headers may hold a collector's credentials: in
      // production they leave the host over TLS only. A collector beside the broker (a sidecar or node
      // agent on loopback, the usual deployment) may speak plain HTTP, as nothing crosses a network.
      for (const key of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] as const) {
        const url = env[key];
        if (env.NODE_ENV === 'production' && url && URL.canParse(url) && !url.startsWith('https:') && !isLoopback(url))
          ctx.addIssue({ code: 'custom', path: [key], message: 'must be https in production, unless on loopback' });
      }
      if (env.EGRESS_ALLOW !== undefined) {
        try {
          parseEgressAllow(env.EGRESS_ALLOW);
        } catch (err) {
          ctx.addIssue({ code: 'custom', path: ['EGRESS_ALLOW'], message: (err as Error).message });
        }
      }
      const webhookProblem = env.WEBHOOK_URL && urlPolicyProblem(env.WEBHOOK_URL, env.NODE_ENV !== 'production');
      if (webhookProblem) ctx.addIssue({ code: 'custom', path: ['WEBHOOK_URL'], message: webhookProblem });
      // The sign-in client's ID Tokens carry its id as their audience: as the MCP audience, they would be
      // accepted as access tokens wherever their `typ` does not tell them apart.
      if (env.MCP_TOKEN_AUDIENCE === (env.OIDC_CLIENT_ID ?? SIGN_IN_CLIENT_ID)) {
        ctx.addIssue({
          code: 'custom',
          path: ['MCP_TOKEN_AUDIENCE'],
          message:
            "must not be OIDC_CLIENT_ID: the sign-in client's ID Tokens carry that audience. Give MCP tokens an API (resource) of their own at the identity provider",
        });
      }
      // Anonymous MCP calls exist for the conformance suite only: development, loopback.
      if (env.MCP_ALLOW_ANONYMOUS === 'true' && (env.NODE_ENV === 'production' || !isLoopbackHost(env.HOST))) {
        ctx.addIssue({
          code: 'custom',
          path: ['MCP_ALLOW_ANONYMOUS'],
          message: 'is allowed only in development with HOST on loopback',
        });
      }
      if (env.NODE_ENV !== 'production') {
        // Development and tests serve TLS themselves (the local CA); a plain listener is for a proxy's certificate.
        if (env.TLS_TERMINATED_BY_PROXY === 'true')
          ctx.addIssue({
            code: 'custom',
            path: ['TLS_TERMINATED_BY_PROXY'],
            message: 'is a production setting (with an https PUBLIC_URL served by the proxy)',
          });
        if (!isLoopbackHost(env.HOST) && env.DEV_ALLOW_NETWORK !== 'true') {
          ctx.addIssue({
            code: 'custom',
            path: ['HOST'],
            message: `is ${env.HOST}, but ${env.NODE_ENV} mode listens on loopback only: it serves a development identity provider with known passwords. Use HOST=127.0.0.1, or set DEV_ALLOW_NETWORK=true to serve it on ${env.HOST} anyway (a container whose ports are published to loopback), or run NODE_ENV=production`,
          });
        }
        return;
      }
      const required = [
        ['PUBLIC_URL', 'an https PUBLIC_URL is required in production'],
        ['OIDC_ISSUER', 'an external https OIDC_ISSUER is required in production'],
        ['OIDC_CLIENT_ID', 'OIDC_CLIENT_ID is required in production'],
        ['OIDC_CLIENT_SECRET', 'OIDC_CLIENT_SECRET is required in production'],
        ['SECRET_KEYS', 'explicit SECRET_KEYS are required in production (development keys are never used)'],
        ['DATABASE_URL', 'DATABASE_URL is required in production (no embedded Postgres)'],
        ['TLS_CERT_FILE', 'TLS_CERT_FILE is required in production (or TLS_TERMINATED_BY_PROXY=true)'],
        ['TLS_KEY_FILE', 'TLS_KEY_FILE is required in production (or TLS_TERMINATED_BY_PROXY=true)'],
      ] as const;
      const terminated = env.TLS_TERMINATED_BY_PROXY === 'true';
      for (const [key, message] of required) {
        if (terminated && (key === 'TLS_CERT_FILE' || key === 'TLS_KEY_FILE')) continue;
        if (env[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message });
      }
      if (terminated) {
        // A plain listener with a certificate is two answers to one question: which one serves users.
        for (const key of ['TLS_CERT_FILE', 'TLS_KEY_FILE'] as const) {
          if (env[key] !== undefined)
            ctx.addIssue({
              code: 'custom',
              path: [key],
              message:
                'must not be set with TLS_TERMINATED_BY_PROXY=true: the broker listens on plain HTTP and the proxy holds the certificate',
            });
        }
        // Every request then comes from the proxy, which can always add X-Forwarded-For: without
        // trusting it, all users share one sign-in budget and every log names the proxy.
        if (env.TRUST_PROXY === TRUST_NO_PROXY)
          ctx.addIssue({
            code: 'custom',
            path: ['TRUST_PROXY'],
            message:
              "is required with TLS_TERMINATED_BY_PROXY=true: the proxy's address (or hop count), so each client keeps its own address",
          });
      }
      if (env.OIDC_ISSUER !== undefined && isLoopback(env.OIDC_ISSUER)) {
        ctx.addIssue({
          code: 'custom',
          path: ['OIDC_ISSUER'],
          message: 'must be an external issuer in production, not loopback',
        });
      }
      // The identity provider sends users back to PUBLIC_URL/auth/callback, and production sign-in
      // refuses a redirect URI the URL policy refuses (oauth/oauthClient.ts): known now, so said now,
      // not as a 503 on /login once the broker is up.
      // (A PUBLIC_URL that is not https has its own problem above.)
      if (env.PUBLIC_URL !== undefined && URL.canParse(env.PUBLIC_URL) && env.PUBLIC_URL.startsWith('https:')) {
        const callback = new URL('/auth/callback', env.PUBLIC_URL).href;
        const problem = isLoopback(env.PUBLIC_URL)
          ? `is loopback (${env.PUBLIC_URL}), but production sign-in refuses a loopback redirect URI (${callback}): set it to the https address users reach the broker at`
          : urlPolicyProblem(callback, false, { allowIpLiteral: true, what: 'gives a sign-in redirect URI that' });
        if (problem) ctx.addIssue({ code: 'custom', path: ['PUBLIC_URL'], message: problem });
      }
      for (const key of [
        'DEV_IDP_PORT',
        'DEV_REPORTS_PORT',
        'DEV_GITHUB_PORT',
        'DEV_UPSTREAM_PORT',
        'DEV_ALLOW_NETWORK',
        'DEV_SECRET_FORM_TOOL',
        'BROKER_FAULT_POINT',
      ] as const) {
        if (env[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'is a development setting' });
      }
    },
    // Run even when other variables failed, so one error lists every problem.
    { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
  );

export interface Config {
  mode: Mode;
  /** trustProxy: TRUST_PROXY, the peers whose X-Forwarded-For names the client (shared/clientAddress.ts). */
  http: {
    host: string;
    port: number;
    publicUrl: URL;
    mcpResourceUrl: string;
    shutdownGraceMs: number;
    trustProxy: ProxyTrust;
  };
  dataDir: string;
  /**
   * directUrl: DATABASE_DIRECT_URL, Postgres itself where `url` is a transaction-mode pooler; set, `url`
   * carries no session state (no startup parameters, no LISTEN, no session lock) and this does.
   */
  db: { url: Secret | undefined; directUrl: Secret | undefined; poolMax: number };
  oidc: { issuer: string | undefined; clientId: string; clientSecret: Secret | undefined };
  secretKeys: { kid: string; key: Secret }[] | undefined;
  /** terminatedByProxy: TLS_TERMINATED_BY_PROXY=true, listen on plain HTTP (production; PUBLIC_URL stays https). */
  tls: {
    certFile: string | undefined;
    keyFile: string | undefined;
    caFile: string | undefined;
    terminatedByProxy: boolean;
  };
  /**
   * allowNetwork: DEV_ALLOW_NETWORK=true, development servers on a non-loopback HOST (said loudly at start).
   * secretFormTool: DEV_SECRET_FORM_TOOL=true, serve dev_secret_form, whose form the audit must refuse.
   */
  dev: {
    idpPort: number;
    reportsPort: number;
    githubPort: number;
    upstreamPort: number;
    allowNetwork: boolean;
    secretFormTool: boolean;
  };
  session: { ttlSeconds: number };
  /**
   * requiredScope: MCP_SCOPE, checked in `scope` or `scp`; advertisedScope: MCP_ADVERTISED_SCOPE (default
   * MCP_SCOPE), what hosts are told to ask for. tokenAudience: MCP_TOKEN_AUDIENCE, undefined for the resource
   * URL. jwtTyp: MCP_TOKEN_TYP=jwt, `typ: JWT` accepted but for the sign-in client's tokens.
   */
  mcp: {
    requiredScope: string;
    advertisedScope: string;
    allowAnonymous: boolean;
    tokenAudience: string | undefined;
    jwtTyp: { signInClientId: string } | undefined;
  };
  broker: {
    providersFile: string | undefined;
    /** Reads PROVIDERS_FILE's `{"env": NAME}` client secrets from the environment (so the file can be committed); a function, so printing the config shows none. */
    providerSecret: (name: string) => string | undefined;
    navigationTtlSeconds: number;
    /** How long a retry waits for a pending connection before answering input_required again. */
    retryWaitMs: number;
    sweepIntervalMs: number;
    /**
     * PROVIDER_TIMEOUT_MS: each request to a provider or an identity provider (discovery, a token
     * endpoint, an API call, a revocation) and to the webhook receiver, its whole answer included.
     */
    providerTimeoutMs: number;
    /** UPSTREAM_TIMEOUT_MS: each request to an upstream MCP server (a proxied call, a tools/list), its whole answer included. */
    upstreamTimeoutMs: number;
  };
  /** EGRESS_ALLOW: the internal names and ranges every outgoing connection may reach (shared/httpClient.ts). */
  egress: { allow: EgressAllow };
  legacy: { urlElicitation: 'nested' | 'error'; waitMs: number; retryWindowMs: number; limits: LegacyLimits };
  /** Sign-in requests per client address, per instance (LOGIN_RATE_BURST, LOGIN_RATE_PER_MINUTE). */
  login: { rateLimit: RateLimit };
  /** Who is an operator: a role in an ID/access token claim (dotted path for nested claims). */
  operators: { roleClaim: string; role: string };
  /** The CLI's operator credential: an access token from the identity provider (BROKER_OPERATOR_TOKEN). */
  cli: { operatorToken: Secret | undefined };
  /** Tools whose verified operations wait in the approval queue (HIGH_RISK_TOOLS; providers mark themselves). */
  highRiskTools: readonly string[];
  /** Module paths of more connection tools (TOOL_MODULES). */
  toolModules: readonly string[];
  /** The file of declared tools (TOOLS_FILE); unset in development, npm start loads config/dev-tools.yaml. */
  toolsFile: string | undefined;
  /** Per-principal limits (QUOTA_*). */
  quotas: Quotas;
  /** GET /metrics: its bearer token (METRICS_TOKEN); without one, open outside production and off (403) in it. */
  metrics: { token: Secret | undefined; openWithoutToken: boolean };
  /**
   * WEBHOOK_URL and WEBHOOK_SECRET: where events are posted and the key that signs them; unset, none is
   * posted. WEBHOOK_SECRET_PREVIOUS: during a rotation, the old key, which signs every delivery too.
   */
  webhook: { url: URL; secret: Secret; previousSecret: Secret | undefined } | undefined;
  log: { level: string };
  /** OTEL_*: where spans go, and which; undefined (no endpoint), no tracing at all. */
  telemetry: TracingSettings | undefined;
  /** BROKER_FAULT_POINT: where this process kills itself (the faults suite; never set in production). */
  faultPoint?: FaultPoint | undefined;
}

/** Every variable the schema reads (provider secrets aside: PROVIDERS_FILE names those), for checks of deployment manifests. */
export const SETTING_NAMES: readonly string[] = Object.freeze(Object.keys(envSchema.shape));

/** Each variable's default where the schema gives one (what an unset variable reads as), for docs/configuration.md's check. */
export function settingDefaults(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(envSchema.shape)
      .map(([name, schema]) => [name, (schema as z.ZodType).safeParse(undefined)] as const)
      .filter(([, parsed]) => parsed.success && parsed.data !== undefined)
      .map(([name, parsed]) => [name, parsed.data]),
  );
}

export class ConfigError extends Error {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Parses the environment once; throws ConfigError listing every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Readonly<Config> {
  const parsed = envSchema.safeParse(emptyToUndefined(env));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || 'environment'}: ${i.message}`));
  }
  const e = parsed.data;
  const publicUrl = new URL(e.PUBLIC_URL ?? `https://${e.HOST.includes(':') ? `[${e.HOST}]` : e.HOST}:${e.PORT}`);
  const base = publicUrl.href.replace(/\/$/, '');
  return Object.freeze({
    mode: e.NODE_ENV,
    http: {
      host: e.HOST,
      port: e.PORT,
      publicUrl,
      mcpResourceUrl: `${base}/mcp`,
      shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
      trustProxy: e.TRUST_PROXY,
    },
    dataDir: e.DATA_DIR,
    db: {
      url: e.DATABASE_URL === undefined ? undefined : new Secret(e.DATABASE_URL),
      directUrl: e.DATABASE_DIRECT_URL === undefined ? undefined : new Secret(e.DATABASE_DIRECT_URL),
      poolMax: e.DATABASE_POOL_MAX,
    },
    oidc: {
      issuer: e.OIDC_ISSUER?.replace(/\/$/, ''),
      clientId: e.OIDC_CLIENT_ID ?? SIGN_IN_CLIENT_ID,
      clientSecret: e.OIDC_CLIENT_SECRET === undefined ? undefined : new Secret(e.OIDC_CLIENT_SECRET),
    },
    secretKeys: e.SECRET_KEYS,
    tls: {
      certFile: e.TLS_CERT_FILE,
      keyFile: e.TLS_KEY_FILE,
      caFile: e.TLS_CA_FILE,
      terminatedByProxy: e.TLS_TERMINATED_BY_PROXY === 'true',
    },
    dev: {
      idpPort: e.DEV_IDP_PORT ?? (e.PORT === 0 ? 0 : e.PORT + 1),
      reportsPort: e.DEV_REPORTS_PORT ?? (e.PORT === 0 ? 0 : e.PORT + 2),
      githubPort: e.DEV_GITHUB_PORT ?? (e.PORT === 0 ? 0 : e.PORT + 3),
      upstreamPort: e.DEV_UPSTREAM_PORT ?? (e.PORT === 0 ? 0 : e.PORT + 4),
      allowNetwork: e.DEV_ALLOW_NETWORK === 'true',
      secretFormTool: e.DEV_SECRET_FORM_TOOL === 'true',
    },
    session: { ttlSeconds: e.SESSION_TTL_SECONDS },
    mcp: {
      requiredScope: e.MCP_SCOPE,
      advertisedScope: e.MCP_ADVERTISED_SCOPE ?? e.MCP_SCOPE,
      allowAnonymous: e.MCP_ALLOW_ANONYMOUS === 'true',
      tokenAudience: e.MCP_TOKEN_AUDIENCE,
      jwtTyp: e.MCP_TOKEN_TYP === 'jwt' ? { signInClientId: e.OIDC_CLIENT_ID ?? SIGN_IN_CLIENT_ID } : undefined,
    },
    broker: {
      providersFile: e.PROVIDERS_FILE,
      providerSecret: (name: string) => env[name],
      navigationTtlSeconds: e.NAVIGATION_TTL_SECONDS,
      retryWaitMs: e.RETRY_WAIT_MS,
      sweepIntervalMs: e.SWEEP_INTERVAL_MS,
      providerTimeoutMs: e.PROVIDER_TIMEOUT_MS,
      upstreamTimeoutMs: e.UPSTREAM_TIMEOUT_MS,
    },
    egress: {
      allow: parseEgressAllow(e.EGRESS_ALLOW ?? (e.NODE_ENV === 'production' ? '' : NON_PRODUCTION_EGRESS_ALLOW)),
    },
    legacy: {
      urlElicitation: e.LEGACY_URL_ELICITATION,
      waitMs: e.LEGACY_WAIT_MS,
      retryWindowMs: e.LEGACY_RETRY_WINDOW_SECONDS * 1000,
      limits: {
        maxSessions: e.LEGACY_MAX_SESSIONS,
        maxSessionsPerPrincipal: e.LEGACY_MAX_SESSIONS_PER_PRINCIPAL,
        idleMs: e.LEGACY_SESSION_IDLE_SECONDS * 1000,
        heartbeatMs: e.LEGACY_STREAM_HEARTBEAT_SECONDS * 1000,
        streamMaxMs: e.LEGACY_STREAM_MAX_SECONDS * 1000,
        watchersPerSession: e.LEGACY_WATCHERS_PER_SESSION,
      },
    },
    login: { rateLimit: { burst: e.LOGIN_RATE_BURST, perMinute: e.LOGIN_RATE_PER_MINUTE } },
    operators: { roleClaim: e.OPERATOR_ROLE_CLAIM, role: e.OPERATOR_ROLE },
    cli: { operatorToken: e.BROKER_OPERATOR_TOKEN === undefined ? undefined : new Secret(e.BROKER_OPERATOR_TOKEN) },
    highRiskTools: e.HIGH_RISK_TOOLS ? e.HIGH_RISK_TOOLS.split(',').map((t) => t.trim()) : [],
    toolModules: e.TOOL_MODULES
      ? e.TOOL_MODULES.split(',')
          .map((t) => t.trim())
          .filter((t) => t !== '')
      : [],
    toolsFile: e.TOOLS_FILE,
    quotas: {
      navigationsPerHour: e.QUOTA_NAVIGATIONS_PER_HOUR,
      openPerProvider: e.QUOTA_OPEN_PER_PROVIDER,
      waitsPerPrincipal: e.QUOTA_WAITS_PER_PRINCIPAL,
      refusalsPerFlow: e.QUOTA_REFUSALS_PER_FLOW,
    },
    metrics: {
      token: e.METRICS_TOKEN === undefined ? undefined : new Secret(e.METRICS_TOKEN),
      openWithoutToken: e.NODE_ENV !== 'production',
    },
    webhook:
      e.WEBHOOK_URL === undefined || e.WEBHOOK_SECRET === undefined
        ? undefined
        : {
            url: new URL(e.WEBHOOK_URL),
            secret: new Secret(e.WEBHOOK_SECRET),
            previousSecret: e.WEBHOOK_SECRET_PREVIOUS === undefined ? undefined : new Secret(e.WEBHOOK_SECRET_PREVIOUS),
          },
    log: { level: e.LOG_LEVEL },
    telemetry: tracingSettings(e),
    faultPoint: e.BROKER_FAULT_POINT,
  });
}

// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is; OTEL_EXPORTER_OTLP_ENDPOINT is a base that
// gets the signal's path (OpenTelemetry Protocol Exporter specification, Endpoint URLs for OTLP/HTTP).
function tracingSettings(e: z.infer<typeof envSchema>): TracingSettings | undefined {
  const base = e.OTEL_EXPORTER_OTLP_ENDPOINT;
  const tracesUrl = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base && `${base.replace(/\/+$/, '')}/v1/traces`);
  if (tracesUrl === undefined) return undefined;
  return {
    tracesUrl: new URL(tracesUrl),
    serviceName: e.OTEL_SERVICE_NAME,
    sampleRatio: e.OTEL_TRACES_SAMPLER_ARG,
    headers: e.OTEL_EXPORTER_OTLP_HEADERS === undefined ? undefined : new Secret(e.OTEL_EXPORTER_OTLP_HEADERS),
  };
}

function urlPolicyProblem(
  url: string,
  allowLoopback: boolean,
  { allowIpLiteral, what }: { allowIpLiteral?: boolean; what?: string } = {},
): string | undefined {
  try {
    checkUrl(url, { allowLoopback, ...(allowIpLiteral !== undefined && { allowIpLiteral }) }, what);
    return undefined;
  } catch (err) {
    if (err instanceof UrlPolicyError) return err.message;
    throw err;
  }
}

function isLoopbackHost(host: string | undefined): boolean {
  return host === 'localhost' || host === '::1' || (host ?? '').startsWith('127.');
}

function isLoopback(url: string): boolean {
  const host = URL.canParse(url) ? new URL(url).hostname : '';
  return host === 'localhost' || host === '[::1]' || host.startsWith('127.');
}

// An exported-but-empty variable (FOO=) means "not set", as in most shells' .env handling.
function emptyToUndefined(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === '' ? undefined : v]));
}

/**
 * The variables loadConfig reads by default, for `broker doctor` (src/cli/doctor.ts), which reports
 * on them as given: every problem, what the others configure, and which values its output must not show.
 */
export function processEnvironment(): Readonly<Record<string, string | undefined>> {
  return process.env;
}
