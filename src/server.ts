import type { RequestListener } from 'node:http';
import { createApp, type AppDeps } from './app.js';
import type { Principal } from './auth/principal.js';
import { createLoginCookies } from './auth/loginCookie.js';
import { reconcileOutcomes, type RedriveDeps } from './jobs/redrive.js';
import { resealPass, type ResealProgress } from './jobs/reseal.js';
import { refreshExpiring, type ProactiveRefreshOptions, type ProactiveRefreshResult } from './jobs/proactiveRefresh.js';
import { buildBrokerDeps } from './buildBrokerDeps.js';
import type { Config } from './config/config.js';
import { createKeyring } from './crypto/keyring.js';
import { createMetrics, type Metrics } from './metrics/metrics.js';
import { routeLabel } from './metrics/routeLabel.js';
import { createSecretBox } from './crypto/secretBox.js';
import type { KeyAgreement } from './secrets/keyAgreement.js';
import { allowedHostsFor } from './mcp/allowedHosts.js';
import { createBearerVerifier } from './mcp/mcpAuth.js';
import { createLegacyEndpoint } from './mcp/legacy/legacyEndpoint.js';
import { createMcpEndpoint } from './mcp/mcpEndpoint.js';
import { createModernServer } from './mcp/mcpServer.js';
import { resourceMetadataUrl } from './mcp/protectedResourceRoutes.js';
import { createRequestStateCodec } from './mcp/requestState.js';
import { createFormGuard } from './mcp/formGuard.js';
import type { Tool } from './mcp/defineTool.js';
import { builtInToolsFor } from './mcp/tools/registry.js';
import { isConnectionTool } from './mcp/defineConnectionTool.js';
import { createToolRegistry } from './mcp/toolRegistry.js';
import { createUpstreamMcp } from './upstream/upstreamMcpClient.js';
import { prefixCollisions } from './upstream/upstreamNames.js';
import { createUpstreamTools } from './upstream/upstreamTools.js';
import type { McpToolDeps } from './mcp/toolDeps.js';
import { toolScopeProblems, ToolModuleError } from './mcp/tools/toolModules.js';
import type { Provider } from './providers/providerConfig.js';
import { providerHosts } from './providers/providerHosts.js';
import { protectedDomainsWith } from './security/protectedDomains.js';
import { clientAddressOf } from './shared/clientAddress.js';
import type { Fetch } from './shared/httpClient.js';
import type { Secret } from './shared/secret.js';
import { tracedFetch } from './telemetry/tracedFetch.js';

/**
 * The configuration's slices the server reads, as loadConfig parsed them, passed through whole to
 * the app, the broker and the MCP endpoints: a new setting needs its schema and its user only.
 * `http.publicUrl` and `http.mcpResourceUrl` are this instance's (a port-0 listener sets its own).
 */
export type ServerSettings = Pick<
  Config,
  | 'http'
  | 'session'
  | 'mcp'
  | 'broker'
  | 'legacy'
  | 'login'
  | 'operators'
  | 'quotas'
  | 'highRiskTools'
  | 'metrics'
  | 'webhook'
>;

/** The process's resources, and the deployment's settings. */
export interface ServerDeps extends Omit<
  AppDeps,
  'settings' | 'logins' | 'broker' | 'formActionOrigins' | 'metrics' | 'ops'
> {
  settings: ServerSettings;
  /** Every request to providers, identity providers and the webhook receiver (PROVIDER_TIMEOUT_MS its deadline). */
  fetch: Fetch;
  /** Requests to upstream MCP servers, with UPSTREAM_TIMEOUT_MS as their deadline (default: `fetch`). */
  upstreamFetch?: Fetch;
  secretKeys: readonly { kid: string; key: Secret }[];
  /** The deployment's agreement on which key seals while a rotation rolls out (main.ts; default: this process alone). */
  keyAgreement?: KeyAgreement;
  version: string;
  providers: readonly Provider[];
  /** Development: loopback URLs pass the URL policy. */
  allowLoopback: boolean;
  /** main.ts passes the process's metrics; absent (tests, benches): a fresh registry without process metrics. */
  metrics?: Metrics;
  /** Connection tools served beside the built-in ones (TOOL_MODULES, loaded by mcp/tools/toolModules.ts). */
  extraTools?: readonly Tool<McpToolDeps>[];
  /** Where the completion signal LISTENs when `pool` goes through a transaction-mode pooler (DATABASE_DIRECT_URL). */
  listenPool?: AppDeps['pool'];
}

export interface BrokerServer {
  listener: RequestListener;
  /** The reconcile sweep: re-drives accepted operations whose outcome is unknown, with the receipt id as idempotency key. */
  reconcile(graceMs: number, batch: number): Promise<{ redriven: number; waiting: number }>;
  /** The re-seal pass: values at rest under an older key of SECRET_KEYS moved to the active one while `inBudget` holds. */
  reseal(inBudget: () => boolean): Promise<ResealProgress>;
  /** The proactive refresh: renews access tokens about to expire, so a tool call rarely waits for one. */
  refreshExpiring(options: ProactiveRefreshOptions): Promise<ProactiveRefreshResult>;
  /**
   * Ends the 2025-11-25 sessions, their streams and the waits of their calls, which then answer at
   * once (a nested call may wait LEGACY_WAIT_MS, longer than any grace period): a stop begins with it.
   */
  endSessions(): void;
  /** Stops what the server holds open (legacy sessions and their streams, the completion listener). */
  close(): Promise<void>;
}

/** Who an MCP call without a bearer token is when MCP_ALLOW_ANONYMOUS=true (config allows it on loopback only). */
const ANONYMOUS_PRINCIPAL: Principal = { iss: 'urn:connect-broker:anonymous', sub: 'anonymous' };
const REQUEST_STATE_TTL_SECONDS = 5 * 60;
const LEGACY_DRAIN_MS = 5_000;

/**
 * The broker, assembled: POST /mcp goes to the MCP endpoint on plain
 * node:http (the hot path); everything else to the Express app.
 */
export function createBrokerServer(deps: ServerDeps): BrokerServer {
  const { http, mcp: mcpSettings } = deps.settings;
  const broker = buildBrokerDeps(deps);
  const { signal } = broker;
  const metrics = deps.metrics ?? createMetrics({ pool: deps.pool, logger: deps.logger, processMetrics: false });
  const requestState = createRequestStateCodec({
    keyring: createKeyring(deps.secretKeys, 'mrtr-request-state', deps.keyAgreement),
    clock: deps.clock,
    ttlSeconds: REQUEST_STATE_TTL_SECONDS,
  });
  const toolDeps = {
    pool: deps.pool,
    requestState,
    fetch: deps.fetch,
    forms: createFormGuard({ pool: deps.pool, clock: deps.clock, refused: metrics.formRefused }),
    connection: {
      broker,
      requestState,
      vault: { pool: deps.pool, box: broker.box, clock: deps.clock, providers: broker.providers },
    },
  };
  // The broker's own tools, by name: one registry with the upstreams' for tools/list, both eras and the re-drive.
  const served = [...builtInToolsFor(deps.providers), ...(deps.extraTools ?? [])].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  // Upstream MCP servers' tools come after, under their prefixes: a prefix that would meet one of the broker's own names is refused.
  const upstreams = deps.providers.filter((p) => p.upstream !== undefined);
  const scopeProblems = [
    ...toolScopeProblems(served, deps.providers),
    ...prefixCollisions(
      served.map((t) => t.name),
      upstreams,
    ),
  ];
  if (scopeProblems.length > 0) throw new ToolModuleError(scopeProblems);
  const registry = createToolRegistry(
    served,
    upstreams.length === 0
      ? undefined
      : createUpstreamTools({
          upstreams,
          mcp: createUpstreamMcp({
            // Each request to an upstream MCP server is a span, the trace context in its headers.
            fetch: tracedFetch(deps.upstreamFetch ?? deps.fetch, {
              name: (_url, init) => `upstream.mcp ${init?.method ?? 'GET'}`,
            }),
            timeoutMs: deps.settings.broker.upstreamTimeoutMs,
            clientInfo: { name: 'connect-broker', version: deps.version },
          }),
          vault: toolDeps.connection.vault,
          pool: deps.pool,
          logger: deps.logger,
          observe: metrics.upstreamCall,
          protectedDomains: protectedDomainsWith(providerHosts(deps.providers)),
        }),
  );
  const redrive: RedriveDeps = {
    broker,
    vault: toolDeps.connection.vault,
    operationFor: (tool, args) => {
      const found = registry.find(tool);
      return found && isConnectionTool(found) ? found.connectionCall(args, toolDeps) : undefined;
    },
  };
  const app = createApp({
    ...deps,
    logins: createLoginCookies(createSecretBox(createKeyring(deps.secretKeys, 'browser-login', deps.keyAgreement))),
    broker,
    // Read as each page is served: an upstream MCP server's authorization server is known once discovered.
    formActionOrigins: () =>
      [...broker.providers.values()].flatMap(({ provider: p }) => {
        const at = p.authorizationEndpoint ?? p.issuer;
        return at === undefined ? [] : [new URL(at).origin];
      }),
    ops: {
      broker,
      redrive,
      gateFigures: metrics.gateFigures,
      upstreamCalls: metrics.upstreamCallCounts,
      webhooksConfigured: deps.settings.webhook !== undefined,
    },
    metrics,
  });
  const { hosts, origins } = allowedHostsFor(http.publicUrl);
  const serverInfo = { name: 'connect-broker', version: deps.version };
  const server = createModernServer({ tools: registry, toolDeps, serverInfo, logger: deps.logger });
  const legacy = createLegacyEndpoint({
    tools: registry,
    toolDeps,
    serverInfo,
    logger: deps.logger,
    ...deps.settings.legacy,
  });
  const mcp = createMcpEndpoint({
    server,
    legacy,
    verifyBearer: createBearerVerifier({
      issuer: deps.issuer,
      audience: mcpSettings.tokenAudience ?? http.mcpResourceUrl,
      requiredScope: mcpSettings.requiredScope,
      jwtTyp: mcpSettings.jwtTyp,
      fetch: deps.fetch,
      clock: deps.clock,
      allowLoopback: deps.allowLoopback,
      ...(mcpSettings.allowAnonymous ? { anonymousPrincipal: ANONYMOUS_PRINCIPAL } : {}),
    }),
    allowedHosts: hosts,
    allowedOrigins: origins,
    resourceMetadataUrl: resourceMetadataUrl(http.mcpResourceUrl),
    requiredScope: mcpSettings.advertisedScope,
    logger: deps.logger,
    addressOf: (req) => clientAddressOf(req, http.trustProxy),
  });
  const mcpPath = new URL(http.mcpResourceUrl).pathname;
  return {
    listener: (req, res) => {
      const path = req.url?.split('?')[0];
      metrics.observeRequest(req, res, routeLabel(path ?? '', mcpPath));
      if (path === mcpPath) mcp(req, res);
      else app(req, res);
    },
    reconcile: (graceMs, batch) => reconcileOutcomes(redrive, graceMs, batch),
    refreshExpiring: (options) => refreshExpiring(toolDeps.connection.vault, deps.logger, options),
    // Only once every live instance holds the first key: an instance still on the old key set would
    // otherwise meet values it cannot open (secrets/keyAgreement.ts).
    reseal: async (inBudget) =>
      (deps.keyAgreement?.settled() ?? true)
        ? resealPass({ pool: deps.pool, box: broker.box, clock: deps.clock, logger: deps.logger }, inBudget)
        : { resealed: 0, unopened: 0 },
    endSessions: () => legacy.close(),
    close: async () => {
      legacy.close();
      // Their sessions ended, the calls still running return soon; they may still write (the ledger)
      // and must find the pool and the completion listener open.
      await legacy.idle(LEGACY_DRAIN_MS);
      await signal.close();
    },
  };
}
