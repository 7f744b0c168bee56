import type { IncomingMessage, ServerResponse } from 'node:http';
import { createLocalJWKSet, errors as joseErrors, jwtVerify } from 'jose';
import { z } from 'zod';
import { toNodeHandler, type NodeIncomingMessageLike } from '@modelcontextprotocol/node';
import {
  bearerAuthChallengeResponse,
  createMcpHandler,
  McpServer,
  OAuthError,
  OAuthErrorCode,
  verifyBearerToken,
  type AuthInfo,
} from '@modelcontextprotocol/server';
import type { Fetch } from '../shared/httpClient.js';
import type { Logger } from '../shared/logger.js';
import type { Render } from '../web/render.js';
import { generateDevAuthKeys, toPublicJwks } from './devAuthKeys.js';
import { createDevAuthServer } from './devAuthServer.js';

export const DEV_UPSTREAM_ID = 'memo';
const SCOPE = 'memo';
const MAX_MEMOS = 100;
// How long a host or the broker may keep memo's tool list.
const LIST_TTL_MS = 10 * 60_000;

/**
 * The development upstream MCP server: the official SDK's stateless (2026-07-28) handler with two
 * tools, `save` and `list` (each user's memos, in memory), behind bearer auth as the MCP
 * authorization spec describes it (a 401 with a Bearer challenge naming its RFC 9728 metadata, JWT
 * access tokens for its own URL), and its own authorization server on the same origin: oidc-provider
 * with our sign-in and consent pages, Client ID Metadata Documents and Dynamic Client Registration,
 * so the broker registers with it as it would with a real one. Keys are made at start: a restart
 * refuses the broker's tokens (a 401), and users connect again.
 */
export async function createDevUpstream(options: {
  origin: string;
  brokerPublicUrl: URL;
  fetch: Fetch;
  render: Render;
  logger: Logger;
}): Promise<{ handler: (req: IncomingMessage, res: ServerResponse) => void; url: string; issuer: string }> {
  const url = `${options.origin}/mcp`;
  const issuer = options.origin;
  const keys = await generateDevAuthKeys();
  const auth = createDevAuthServer({
    issuer,
    brand: 'Memo (development MCP server)',
    cookiePrefix: 'memo',
    keys,
    clients: [],
    resources: [{ identifier: url, scope: SCOPE, accessTokenTtlSeconds: 600 }],
    subjectOf: (login) => `memo-${login}`,
    consent: 'prompt',
    webClients: { fetch: options.fetch, origins: [options.brokerPublicUrl.origin] },
    render: options.render,
    logger: options.logger,
  });
  const metadataPath = '/.well-known/oauth-protected-resource/mcp';
  const metadata = JSON.stringify({ resource: url, authorization_servers: [issuer], scopes_supported: [SCOPE] });
  const jwks = createLocalJWKSet(toPublicJwks(keys));
  const bearer = {
    requiredScopes: [SCOPE],
    resourceMetadataUrl: `${options.origin}${metadataPath}`,
    expectedResource: new URL(url),
    verifier: {
      async verifyAccessToken(token: string): Promise<AuthInfo> {
        try {
          const { payload } = await jwtVerify(token, jwks, { issuer, audience: url, requiredClaims: ['sub', 'exp'] });
          return {
            token,
            clientId: String(payload['client_id']),
            scopes: typeof payload['scope'] === 'string' ? payload['scope'].split(' ') : [],
            expiresAt: payload.exp!,
            resource: new URL(url),
            extra: { sub: payload.sub },
          };
        } catch (err) {
          if (err instanceof joseErrors.JOSEError)
            throw new OAuthError(OAuthErrorCode.InvalidToken, 'The access token is not valid for this server.');
          throw err;
        }
      },
    },
  };
  const memos = new Map<string, string[]>();
  const mcp = toNodeHandler(
    createMcpHandler(
      (ctx) => {
        const sub = String(ctx.authInfo?.extra?.['sub'] ?? '');
        // Its two tools are the same for everyone and never change: a list any cache may keep and share
        // (MCP 2026-07-28, caching: cacheScope public for a list identical for all users).
        const server = new McpServer(
          { name: 'memo', version: 'development' },
          { capabilities: { tools: {} }, cacheHints: { 'tools/list': { ttlMs: LIST_TTL_MS, cacheScope: 'public' } } },
        );
        server.registerTool(
          'save',
          {
            title: 'Save a memo',
            description: 'Saves a short memo for the signed-in user.',
            inputSchema: z.strictObject({ text: z.string().min(1).max(500) }),
          },
          ({ text }) => {
            const mine = memos.get(sub) ?? [];
            if (mine.length >= MAX_MEMOS)
              return { isError: true, content: [{ type: 'text', text: 'Too many memos.' }] };
            memos.set(sub, [...mine, text]);
            return { content: [{ type: 'text', text: `Saved memo ${mine.length + 1}.` }] };
          },
        );
        server.registerTool(
          'list',
          { title: 'List memos', description: "The signed-in user's memos.", inputSchema: z.strictObject({}) },
          () => {
            const mine = memos.get(sub) ?? [];
            return {
              content: [
                {
                  type: 'text',
                  text: mine.length === 0 ? 'No memos.' : mine.map((m, i) => `${i + 1}. ${m}`).join('\n'),
                },
              ],
              structuredContent: { memos: mine },
            };
          },
        );
        return server;
      },
      { legacy: 'reject' },
    ),
  );
  return {
    url,
    issuer,
    handler: (req, res) => {
      const path = req.url?.split('?')[0] ?? '';
      if (req.method === 'GET' && path === metadataPath)
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(metadata);
      if (path !== '/mcp') return auth.handler(req, res);
      verifyBearerToken(req.headers.authorization, bearer).then(
        (info) => mcp(Object.assign(req, { auth: info }) as NodeIncomingMessageLike, res),
        async (err: unknown) => {
          const answer = bearerAuthChallengeResponse(err, bearer);
          res.writeHead(answer.status, Object.fromEntries(answer.headers)).end(await answer.text());
        },
      );
    },
  };
}
