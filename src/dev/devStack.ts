import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { DEV_TOKEN_CLIENT_ID, DEV_TOKEN_REDIRECT_URI } from './devTokenClient.js';
import { listenHttps, type RunningServer, type TlsPair } from '../runtime/httpsServer.js';
import type { Fetch } from '../shared/httpClient.js';
import type { Logger } from '../shared/logger.js';
import type { Render } from '../web/render.js';
import { DEV_PROVIDER_SCOPES } from '../mcp/declared/devDefaults.js';
import { toPublicJwks } from './devAuthKeys.js';
import { createDevAuthServer } from './devAuthServer.js';
import { createDevGithubServer } from './devGithubServer.js';
import { createDevUpstream, DEV_UPSTREAM_ID } from './devUpstream.js';
import { openGithubStore } from './devGithubStore.js';
import { openFileAdapter } from './devProviderAdapter.js';
import type { DevSecrets } from './devSecrets.js';
import { createDevRoles, type DevRoles } from './devUsers.js';
import { createReportApi } from './reportApi.js';
import { openReportStore } from './reportStore.js';

export interface DevStackOptions {
  host: string;
  idpPort: number;
  reportsPort: number;
  /** The GitHub-like development provider's port; it does not run when absent. */
  githubPort?: number;
  /** The development upstream MCP server's port (its authorization server beside it); it does not run when absent. */
  upstreamPort?: number;
  tls: TlsPair;
  /** Verified TLS with the development CA: the identity provider fetches Client ID Metadata Documents with it. */
  fetch: Fetch;
  secrets: DevSecrets;
  /** The broker's public URL, for its redirect URIs; its MCP resource URL is the IdP's token audience. */
  brokerPublicUrl: URL;
  mcpResourceUrl: string;
  /** Where the Report Service keeps its reports; in memory when absent. */
  dataDir: string | undefined;
  render: Render;
  logger: Logger;
}

export interface DevStack {
  /** `roles`: what the identity provider says each demo user's roles are from now on (`devUsers` at start). */
  idp: { issuer: string; brokerClientId: string; roles: DevRoles };
  reports: { issuer: string; apiUrl: string; brokerClientId: string };
  /** Present when `githubPort` was given. `host` is what a GitHub Enterprise Server catalog entry takes. */
  github?: {
    origin: string;
    host: string;
    apiUrl: string;
    brokerClientId: string;
    clientSecret: string;
    callbackUrl: string;
  };
  /** Present when `upstreamPort` was given: the development upstream MCP server (devUpstream.ts). */
  upstream?: { url: string; issuer: string };
  close(graceMs: number): Promise<void>;
}

/** The development servers on free loopback ports, for a broker at `brokerUrl` (tests and benchmarks). */
export function startLocalDevStack(
  options: Pick<DevStackOptions, 'tls' | 'fetch' | 'secrets' | 'render' | 'logger'> & {
    brokerUrl: string;
    github?: boolean;
    upstream?: boolean;
  },
): Promise<DevStack> {
  const { brokerUrl, github, upstream, ...rest } = options;
  const ports = {
    idpPort: 0,
    reportsPort: 0,
    ...(github ? { githubPort: 0 } : {}),
    ...(upstream ? { upstreamPort: 0 } : {}),
  };
  return startDevStack({
    ...rest,
    host: '127.0.0.1',
    ...ports,
    brokerPublicUrl: new URL(brokerUrl),
    mcpResourceUrl: `${brokerUrl}/mcp`,
    dataDir: undefined,
  });
}

/** The Report Service as an entry of the broker's provider list (validated by parseProviders like any other). */
export function reportServiceProvider(stack: Pick<DevStack, 'reports'>, secrets: DevSecrets): Record<string, unknown> {
  return {
    id: 'reports',
    displayName: 'Report Service',
    issuer: stack.reports.issuer,
    clientId: stack.reports.brokerClientId,
    clientSecret: secrets.brokerReportsClientSecret,
    scopes: [...DEV_PROVIDER_SCOPES.reports],
    apiBase: stack.reports.apiUrl,
    audience: stack.reports.apiUrl,
  };
}

/**
 * The GitHub-like development provider as an operator would configure a
 * GitHub Enterprise Server: the `github` catalog entry, its `host` parameter
 * pointing at the emulator (validated by parseProviders like any other).
 */
export function githubDevProvider(github: NonNullable<DevStack['github']>): Record<string, unknown> {
  return {
    id: 'github',
    catalog: 'github',
    displayName: 'GitHub (development)',
    clientId: github.brokerClientId,
    clientSecret: github.clientSecret,
    scopes: [...DEV_PROVIDER_SCOPES.github],
    params: { host: github.host },
  };
}

/** The development upstream MCP server as an operator would put a remote MCP server behind the broker. */
export function devUpstreamProvider(upstream: NonNullable<DevStack['upstream']>): Record<string, unknown> {
  return {
    id: DEV_UPSTREAM_ID,
    kind: 'mcp',
    displayName: 'Memo (development MCP server)',
    url: upstream.url,
    prefix: DEV_UPSTREAM_ID,
    registration: 'auto',
  };
}

/**
 * The development providers as npm start adds them to the provider list, from the configured ports
 * alone and with nothing started: for the CLI, which calls them on a running stack (a disconnect).
 * A port of 0 is chosen at start and cannot be known here, so that provider is left out.
 */
export function devProviderEntries(
  at: { publicUrl: URL; reportsPort: number; githubPort: number; upstreamPort?: number },
  secrets: DevSecrets,
): Record<string, unknown>[] {
  return [
    ...(at.upstreamPort === undefined || at.upstreamPort === 0
      ? []
      : [devUpstreamProvider(upstreamAt(at.publicUrl, at.upstreamPort))]),
    ...(at.reportsPort === 0
      ? []
      : [reportServiceProvider({ reports: reportsAt(at.publicUrl, at.reportsPort) }, secrets)]),
    ...(at.githubPort === 0 ? [] : [githubDevProvider(githubAt(at.publicUrl, at.githubPort, secrets))]),
  ];
}

// Issuers are named by the host the broker is reached on, not the listen address (0.0.0.0 in a container).
function reportsAt(publicUrl: URL, port: number): DevStack['reports'] {
  const issuer = `https://${publicUrl.hostname}:${port}`;
  return { issuer, apiUrl: `${issuer}/api`, brokerClientId: BROKER_REPORTS_CLIENT_ID };
}

function upstreamAt(publicUrl: URL, port: number): NonNullable<DevStack['upstream']> {
  const origin = `https://${publicUrl.hostname}:${port}`;
  return { url: `${origin}/mcp`, issuer: origin };
}

function githubAt(publicUrl: URL, port: number, secrets: DevSecrets): NonNullable<DevStack['github']> {
  const host = `${publicUrl.hostname}:${port}`;
  const origin = `https://${host}`;
  return {
    origin,
    host,
    apiUrl: `${origin}/api/v3`,
    brokerClientId: BROKER_GITHUB_CLIENT_ID,
    // Derived from the development keys rather than kept in dev-secrets.json, so that file's shape stays as it is.
    clientSecret: createHmac('sha256', secrets.secretKeys[0]?.key ?? '')
      .update('dev-github-client-secret')
      .digest('base64url'),
    callbackUrl: new URL('/oauth/callback/github', publicUrl).href,
  };
}

export const BROKER_IDP_CLIENT_ID = 'connect-broker';
export const BROKER_REPORTS_CLIENT_ID = 'connect-broker';
export const BROKER_GITHUB_CLIENT_ID = 'Iv1.devconnectbroker';

/**
 * The development identity provider and the demo Report Service, each a real
 * OAuth server on its own HTTPS port. The servers listen first so that the
 * issuer URLs carry the real ports (port 0 in tests).
 */
export async function startDevStack(options: DevStackOptions): Promise<DevStack> {
  const { secrets, brokerPublicUrl } = options;
  let idpHandler: RunningHandler = notReady;
  let reportsHandler: RunningHandler = notReady;
  const started: RunningServer[] = [];
  try {
    const idpServer = await listenHttps(
      options.tls,
      (req, res) => idpHandler(req, res),
      options.host,
      options.idpPort,
      'development identity provider',
    );
    started.push(idpServer);
    const reportsServer = await listenHttps(
      options.tls,
      (req, res) => reportsHandler(req, res),
      options.host,
      options.reportsPort,
      'Report Service',
    );
    started.push(reportsServer);

    // Issuers are named by the host the broker is reached on, not the listen address (0.0.0.0 in a container).
    const idpIssuer = `https://${brokerPublicUrl.hostname}:${idpServer.port}`;
    const reports = reportsAt(brokerPublicUrl, reportsServer.port);
    const { issuer: reportsIssuer, apiUrl } = reports;

    const idpRoles = createDevRoles();
    idpHandler = createDevAuthServer({
      issuer: idpIssuer,
      brand: 'Development identity provider',
      cookiePrefix: 'idp',
      keys: secrets.idp,
      clients: [
        {
          clientId: BROKER_IDP_CLIENT_ID,
          clientSecret: secrets.brokerIdpClientSecret,
          name: 'Connect Broker',
          redirectUris: [new URL('/auth/callback', brokerPublicUrl).href],
          postLogoutRedirectUris: [new URL('/', brokerPublicUrl).href],
          // Operator actions need a recent authentication, which the broker reads from auth_time.
          requireAuthTime: true,
        },
        // Loopback on IPv4 and IPv6, any port (RFC 8252 §7.3), so hosts configured with this client id work too.
        {
          clientId: DEV_TOKEN_CLIENT_ID,
          public: true,
          name: 'broker dev-token',
          redirectUris: onBothLoopbacks(DEV_TOKEN_REDIRECT_URI),
          grantTypes: ['authorization_code'],
        },
      ],
      resources: [{ identifier: options.mcpResourceUrl, scope: 'mcp', accessTokenTtlSeconds: 3600 }],
      subjectOf: (login) => login,
      rolesOf: idpRoles.of,
      consent: 'implicit',
      // MCP hosts that do their own OAuth register (RFC 7591) or name their metadata document.
      openRegistration: { fetch: options.fetch },
      // Grants and refresh tokens survive a restart, as a real provider's would.
      ...(options.dataDir ? { adapter: await openFileAdapter(join(options.dataDir, 'idp-provider.json')) } : {}),
      render: options.render,
      logger: options.logger.child({ server: 'idp' }),
    }).handler;

    const store = await openReportStore(
      options.dataDir ? { filePath: join(options.dataDir, 'report-service.json') } : {},
    );
    const reportsAuth = createDevAuthServer({
      issuer: reportsIssuer,
      brand: 'Report Service',
      cookiePrefix: 'reports',
      keys: secrets.reports,
      clients: [
        {
          clientId: BROKER_REPORTS_CLIENT_ID,
          clientSecret: secrets.brokerReportsClientSecret,
          name: 'Connect Broker',
          redirectUris: [new URL('/oauth/callback/reports', brokerPublicUrl).href],
        },
      ],
      resources: [{ identifier: apiUrl, scope: 'reports:read reports:write', accessTokenTtlSeconds: 600 }],
      subjectOf: (login) => `rs-user-${login}`,
      consent: 'prompt',
      ...(options.dataDir
        ? { adapter: await openFileAdapter(join(options.dataDir, 'report-service-provider.json')) }
        : {}),
      render: options.render,
      logger: options.logger.child({ server: 'reports' }),
      api: createReportApi({
        issuer: reportsIssuer,
        audience: apiUrl,
        jwks: toPublicJwks(secrets.reports),
        store,
        logger: options.logger.child({ server: 'reports-api' }),
      }),
    });
    reportsHandler = reportsAuth.handler;
    const github =
      options.githubPort === undefined ? undefined : await startGithub(options, options.githubPort, started);
    const upstream =
      options.upstreamPort === undefined ? undefined : await startUpstream(options, options.upstreamPort, started);

    return {
      idp: { issuer: idpIssuer, brokerClientId: BROKER_IDP_CLIENT_ID, roles: idpRoles },
      reports,
      ...(github ? { github } : {}),
      ...(upstream ? { upstream } : {}),
      close: async (graceMs) => {
        await Promise.all(started.map((s) => s.close(graceMs)));
      },
    };
  } catch (err) {
    await Promise.all(started.map((s) => s.close(0)));
    throw err;
  }
}

async function startGithub(
  options: DevStackOptions,
  port: number,
  started: RunningServer[],
): Promise<NonNullable<DevStack['github']>> {
  let handler: RunningHandler = notReady;
  const server = await listenHttps(
    options.tls,
    (req, res) => handler(req, res),
    options.host,
    port,
    'GitHub-like development provider',
  );
  started.push(server);
  const facts = githubAt(options.brokerPublicUrl, server.port, options.secrets);
  const { origin, clientSecret, callbackUrl } = facts;
  const store = await openGithubStore(options.dataDir ? { filePath: join(options.dataDir, 'dev-github.json') } : {});
  const github = createDevGithubServer({
    origin,
    apps: [{ clientId: BROKER_GITHUB_CLIENT_ID, clientSecret, name: 'Connect Broker', callbackUrl }],
    store,
    render: options.render,
    logger: options.logger.child({ server: 'github' }),
  });
  handler = github.handler;
  return facts;
}

async function startUpstream(
  options: DevStackOptions,
  port: number,
  started: RunningServer[],
): Promise<NonNullable<DevStack['upstream']>> {
  let handler: RunningHandler = notReady;
  const server = await listenHttps(
    options.tls,
    (req, res) => handler(req, res),
    options.host,
    port,
    'development upstream MCP server',
  );
  started.push(server);
  const facts = upstreamAt(options.brokerPublicUrl, server.port);
  const upstream = await createDevUpstream({
    origin: facts.issuer,
    brokerPublicUrl: options.brokerPublicUrl,
    fetch: options.fetch,
    render: options.render,
    logger: options.logger.child({ server: 'upstream-mcp' }),
  });
  handler = upstream.handler;
  return facts;
}

function onBothLoopbacks(uri: string): string[] {
  const ipv6 = new URL(uri);
  ipv6.hostname = '[::1]';
  return [uri, ipv6.href];
}

type RunningHandler = Parameters<typeof listenHttps>[1];

const notReady: RunningHandler = (_req, res) => {
  res.statusCode = 503;
  res.end('starting');
};
