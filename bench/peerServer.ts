import type { RequestListener, ServerResponse } from 'node:http';
import {
  hostHeaderValidation,
  originValidation,
  toNodeHandler,
  type NodeIncomingMessageLike,
} from '@modelcontextprotocol/node';
import {
  bearerAuthChallengeResponse,
  createMcpHandler,
  McpServer,
  verifyBearerToken,
} from '@modelcontextprotocol/server';
import type { Pool } from '../src/db/pool.js';
import type { Fetch } from '../src/shared/httpClient.js';
import type { Logger } from '../src/shared/logger.js';
import { createPeerVerifier, principalOf } from './peerAuth.js';
import { registerPeerTools } from './peerTools.js';

export interface PeerDeps {
  pool: Pool;
  issuer: string;
  /** The broker's MCP resource URL, the audience of the tokens both servers accept. */
  audience: string;
  /** RFC 9728 metadata URL for the challenge (the broker's; the peer serves none). */
  resourceMetadataUrl: string;
  fetch: Fetch;
  logger: Logger;
}

const SCOPE = 'mcp';

/**
 * The comparison server: the SDK v2's own way to serve 2026-07-28 over HTTP.
 * `createMcpHandler` builds an McpServer per request from the factory (the
 * verified principal goes in through `authInfo`), wrapped for node:http with
 * `toNodeHandler`; Host/Origin checks and bearer verification sit in front,
 * as the broker's endpoint does them.
 */
export function createPeerListener(deps: PeerDeps): { listener: RequestListener; close: () => Promise<void> } {
  const handler = createMcpHandler(
    (ctx) => {
      const principal = principalOf(ctx.authInfo);
      if (!principal) throw new Error('peer: the factory ran without a verified principal');
      const server = new McpServer(
        { name: 'sdk-peer', version: 'bench' },
        {
          capabilities: { tools: {} },
          instructions:
            'Notes tools with an explicit workspaceUri; deletions are confirmed by the user in a form. Call notes_workspaces first.',
          // The broker's cache hints (src/mcp/mcpServer.ts).
          cacheHints: {
            'tools/list': { ttlMs: 5 * 60 * 1000, cacheScope: 'public' },
            'server/discover': { ttlMs: 60 * 60 * 1000, cacheScope: 'public' },
          },
        },
      );
      registerPeerTools(server, { pool: deps.pool }, principal);
      return server;
    },
    { legacy: 'reject', onerror: (err) => deps.logger.warn({ err }, 'peer: MCP handler error') },
  );
  const serve = toNodeHandler(handler, { onerror: (err) => deps.logger.error({ err }, 'peer: adapter error') });
  const checkHost = hostHeaderValidation(['127.0.0.1']);
  const checkOrigin = originValidation(['127.0.0.1']);
  const verifier = createPeerVerifier({ issuer: deps.issuer, audience: deps.audience, fetch: deps.fetch });
  const bearer = {
    verifier,
    requiredScopes: [SCOPE],
    resourceMetadataUrl: deps.resourceMetadataUrl,
    expectedResource: new URL(deps.audience),
  };

  const listener: RequestListener = (req, res) => {
    if (req.url?.split('?')[0] !== '/mcp') return void res.writeHead(404).end();
    if (!checkHost(req, res) || !checkOrigin(req, res)) return;
    verifyBearerToken(req.headers.authorization, bearer)
      .then(
        // IncomingMessage types `method` as `string | undefined`, which the SDK's duck type rejects under exactOptionalPropertyTypes.
        (auth) => serve(Object.assign(req, { auth }) as NodeIncomingMessageLike, res),
        (err: unknown) => writeResponse(res, bearerAuthChallengeResponse(err, bearer)),
      )
      .catch((err: unknown) => {
        deps.logger.error({ err }, 'peer: request failed');
        if (!res.headersSent) res.writeHead(500).end();
      });
  };
  return { listener, close: () => handler.close() };
}

async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const body = await response.text();
  res.writeHead(response.status, Object.fromEntries(response.headers)).end(body);
}
