import type { RequestListener } from 'node:http';
import { createApp, type AppDeps } from './app.js';
import type { Principal } from './auth/principal.js';
import { createKeyring } from './crypto/keyring.js';
import { allowedHostsFor } from './mcp/allowedHosts.js';
import { createBearerVerifier } from './mcp/mcpAuth.js';
import { createMcpEndpoint } from './mcp/mcpEndpoint.js';
import { createModernServer } from './mcp/mcpServer.js';
import { resourceMetadataUrl } from './mcp/protectedResourceRoutes.js';
import { createRequestStateCodec } from './mcp/requestState.js';
import { tools } from './mcp/tools/registry.js';
import type { Fetch } from './shared/httpClient.js';
import type { Secret } from './shared/secret.js';

export interface ServerDeps extends Omit<AppDeps, 'mcp'> {
  issuer: string;
  fetch: Fetch;
  secretKeys: readonly { kid: string; key: Secret }[];
  mcpScope: string;
  /** Development-only anonymous MCP principal (config refuses it elsewhere). */
  anonymousPrincipal: Principal | undefined;
  version: string;
}

export const ANONYMOUS_PRINCIPAL: Principal = { iss: 'urn:connect-broker:anonymous', sub: 'anonymous' };
const REQUEST_STATE_TTL_SECONDS = 5 * 60;

/**
 * The broker's one request listener: POST /mcp goes to the MCP endpoint on
 * plain node:http (the hot path); everything else to the Express app.
 */
export function createServerListener(deps: ServerDeps): RequestListener {
  const app = createApp({ ...deps, mcp: { issuer: deps.issuer, scope: deps.mcpScope } });
  const { hosts, origins } = allowedHostsFor(deps.publicUrl);
  const server = createModernServer({
    tools,
    toolDeps: {
      pool: deps.pool,
      requestState: createRequestStateCodec({ keyring: createKeyring(deps.secretKeys, 'mrtr-request-state'), clock: deps.clock, ttlSeconds: REQUEST_STATE_TTL_SECONDS }),
    },
    serverInfo: { name: 'connect-broker', version: deps.version },
    logger: deps.logger,
  });
  const mcp = createMcpEndpoint({
    server,
    verifyBearer: createBearerVerifier({
      issuer: deps.issuer,
      audience: deps.mcpResourceUrl,
      requiredScope: deps.mcpScope,
      fetch: deps.fetch,
      clock: deps.clock,
      ...(deps.anonymousPrincipal ? { anonymousPrincipal: deps.anonymousPrincipal } : {}),
    }),
    allowedHosts: hosts,
    allowedOrigins: origins,
    resourceMetadataUrl: resourceMetadataUrl(deps.mcpResourceUrl),
    requiredScope: deps.mcpScope,
    logger: deps.logger,
  });
  const mcpPath = new URL(deps.mcpResourceUrl).pathname;
  return (req, res) => {
    const path = req.url?.split('?')[0];
    if (path === mcpPath) mcp(req, res);
    else app(req, res);
  };
}
