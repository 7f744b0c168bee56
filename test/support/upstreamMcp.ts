import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import { createLocalJWKSet, decodeJwt, errors as joseErrors, importJWK, jwtVerify, SignJWT } from 'jose';
import { type KoaContextWithOIDC, Provider } from 'oidc-provider';
import { z } from 'zod';
import { randomUUID } from 'node:crypto';
import {
  NodeStreamableHTTPServerTransport,
  toNodeHandler,
  type NodeIncomingMessageLike,
} from '@modelcontextprotocol/node';
import {
  acceptedContent,
  inputResponse,
  type ServerContext,
  bearerAuthChallengeResponse,
  createMcpHandler,
  inputRequired,
  McpServer,
  OAuthError,
  OAuthErrorCode,
  verifyBearerToken,
  type AuthInfo,
} from '@modelcontextprotocol/server';
import { pageErrors } from '../../src/dev/devAuthServer.js';
import { generateDevAuthKeys, toPublicJwks } from '../../src/dev/devAuthKeys.js';
import { createInteractionRouter } from '../../src/dev/devInteractions.js';
import { buildProviderConfig } from '../../src/dev/devProviderConfig.js';
import { providerHeaders } from '../../src/dev/devProviderPages.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import type { TlsMaterial } from '../../src/tls/localCa.js';
import { createRender } from '../../src/web/render.js';
import { listenHttps } from './httpsTestServer.js';

/**
 * How the upstream's authorization server lets a client in: Client ID Metadata Documents (and DCR
 * beside them, so the broker's preference shows), Dynamic Client Registration only, or only the one
 * pre-registered client.
 */
export type UpstreamRegistration = 'cimd' | 'dcr' | 'static';

/** Where its Protected Resource Metadata is: named in the 401's challenge, path-inserted, or at the root only. */
export type MetadataPlacement = 'challenge' | 'path' | 'root';

export const UPSTREAM_SCOPE = 'notes:read';

export interface UpstreamMcp {
  /** The MCP endpoint, and its resource identifier: https://127.0.0.1:<port>/mcp. */
  url: string;
  issuer: string;
  /** The pre-registered client (`static`): its redirect URI is the one the server was started with. */
  staticClient: { id: string; secret: string };
  provider: Provider;
  /** The parameters of each authorization request the authorization server received. */
  authorizations: Record<string, unknown>[];
  /** Each token request: its grant, its `resource`, the client, and whether it authenticated with HTTP Basic. */
  tokenRequests: { grantType: unknown; resource: unknown; clientId: string | undefined; basic: boolean }[];
  /** The client ids it registered (RFC 7591). */
  registrations: string[];
  /** The Client ID Metadata Documents it fetched, by URL. */
  documentFetches: string[];
  /** Requests to the MCP server's origin, by path, in order (discovery's probes). */
  requests: string[];
  /** Every request its authorization server received: method, path and whether it carried an Authorization header. */
  authRequests: { method: string; path: string; authorization: boolean }[];
  /**
   * The authorization servers its Protected Resource Metadata names (its own issuer at first): a test
   * assigns another's to play an upstream whose metadata was changed.
   */
  authorizationServers: string[];
  /**
   * Set: its authorization server ignores `resource` and issues every access token for this audience
   * instead (re-signed with its own key), as an identity provider shared with the broker could.
   */
  tokenAudience: string | undefined;
  /** The tokens the MCP server accepted: whose, for which audience, from which client. */
  accepted: { sub: string; aud: unknown; clientId: string }[];
  /** Every Authorization header the MCP server received, as sent. */
  bearers: string[];
  /** Each tools/call that reached the MCP server: the tool, its arguments, whose token (undefined: refused). */
  calls: { tool: string; args: unknown; sub: string | undefined }[];
  /** The JSON-RPC method of each POST to /mcp, in order (a notification's too; a response to its request: `response`). */
  methods: string[];
  /** Each JSON-RPC response the broker posted to one of its requests (2025-11-25: an elicitation's answer or error). */
  responses: Record<string, unknown>[];
  /** The name of every request header the MCP endpoint received. */
  headerNames: Set<string>;
  /** A tools/call whose arguments' `title` is a key here waits for that promise before it is answered. */
  gates: Map<string, Promise<void>>;
  /**
   * How the MCP server answers a tools/call from now on: as the SDK does, after `slowMs`
   * (default 60 s), with a body that is not JSON-RPC, or by cutting the connection once it has read it;
   * with `onlyTitle`, only the calls whose arguments' `title` is that one (the others as the SDK does).
   */
  behaviour: {
    mode: 'normal' | 'slow' | 'garbage' | 'reset' | 'refuse';
    slowMs?: number;
    onlyTitle?: string;
    /** Each tools/list answers this much later. */
    listDelayMs?: number;
  };
  /** The title of each note create_note made (what the tool did, where `calls` is what reached the server). */
  created: string[];
  /** 2025-11-25: whose token each initialize came with (its `sub`). */
  initializes: string[];
  /** 2025-11-25: the live sessions, by Mcp-Session-Id (clear it to end them all: the next request gets 404). */
  sessions: Map<string, NodeStreamableHTTPServerTransport>;
  /** Each retry that brought answers to one of its questions (input_required): the tool, the answers, the requestState echoed. */
  answers: { tool: string; inputResponses: Record<string, unknown>; requestState: unknown }[];
  /** Stops the MCP server's listener only (its authorization server stays): connections are refused. */
  stopMcp(): Promise<void>;
  close(): Promise<void>;
}

/**
 * An upstream MCP server as the MCP authorization spec describes one: the official SDK's stateless
 * handler behind bearer auth (JWT access tokens from its own authorization server, audience its own
 * URL), answering 401 with a `WWW-Authenticate` Bearer challenge and serving RFC 9728 metadata; and
 * that authorization server, oidc-provider with our sign-in and consent pages, the resource
 * (RFC 8707) its only one, the registration features `registration` selects, and sign-in subjects
 * `up-<login>`. `fetch` is what it fetches Client ID Metadata Documents with (it must trust the test
 * CA; it replaces the dispatcher oidc-provider passes, whose SSRF guard refuses loopback).
 */
export async function startUpstreamMcp(options: {
  tls: TlsMaterial;
  registration: UpstreamRegistration;
  metadata: MetadataPlacement;
  fetch: Fetch;
  /** The pre-registered client's redirect URI (the broker's callback for this upstream). */
  staticRedirectUri?: string;
  /** A path for the authorization server's issuer (`/tenant`): discovery must then try the path forms. */
  issuerPath?: string;
  /** 2025-11-25: initialize and sessions (Mcp-Session-Id, 404 for one it does not know) instead of stateless 2026-07-28. */
  era?: '2026-07-28' | '2025-11-25';
  /** Also serves ask_secret (a form asking for a password) and open_link (a URL elicitation of its `url` argument). */
  eliciting?: boolean;
  /** 2025-11-25: answer on an event stream (where its requests to the client go, before the answer) instead of JSON. */
  streams?: boolean;
  /** The ttlMs its tools/list answers with (2026-07-28; private, as the list differs per user); else the SDK's 0. */
  listTtlMs?: number;
  /** Marks its tools/list public (cacheScope public, this ttlMs) and serves every user the same list (no alice_diary). */
  publicListTtlMs?: number;
  /** The name both origins are written with (it must resolve to 127.0.0.1), and their ports; else 127.0.0.1, any ports. */
  listen?: { hostname: string; mcpPort: number; authPort: number };
  /** 2026-07-28: lists its tools to anyone (server/discover and tools/list need no token); calls still do. */
  anonymousList?: boolean;
}): Promise<UpstreamMcp> {
  const at = options.listen;
  const mcpServer = await listenHttps(options.tls, at ? { hostname: at.hostname, port: at.mcpPort } : {});
  const authServer = await listenHttps(options.tls, at ? { hostname: at.hostname, port: at.authPort } : {});
  const url = `${mcpServer.origin}/mcp`;
  const issuer = `${authServer.origin}${options.issuerPath ?? ''}`;
  const staticClient = { id: 'upstream-static-client', secret: 'upstream-static-secret-canary' };
  const keys = await generateDevAuthKeys();
  const logger = createLogger({ level: 'silent' });
  const render = createRender({ cache: false });
  const seen = {
    authorizations: [] as UpstreamMcp['authorizations'],
    tokenRequests: [] as UpstreamMcp['tokenRequests'],
    registrations: [] as string[],
    documentFetches: [] as string[],
    requests: [] as string[],
    authRequests: [] as UpstreamMcp['authRequests'],
    authorizationServers: [issuer],
    tokenAudience: undefined as string | undefined,
    accepted: [] as UpstreamMcp['accepted'],
    bearers: [] as string[],
    calls: [] as UpstreamMcp['calls'],
    methods: [] as string[],
    headerNames: new Set<string>(),
    responses: [] as Record<string, unknown>[],
    gates: new Map<string, Promise<void>>(),
    behaviour: { mode: 'normal' } as UpstreamMcp['behaviour'],
    initializes: [] as string[],
    created: [] as string[],
    sessions: new Map<string, NodeStreamableHTTPServerTransport>(),
    answers: [] as UpstreamMcp['answers'],
  };

  const base = buildProviderConfig({
    brand: 'Upstream Notes',
    cookiePrefix: 'upstream',
    keys,
    clients:
      options.registration === 'static' && options.staticRedirectUri
        ? [
            {
              clientId: staticClient.id,
              clientSecret: staticClient.secret,
              name: 'Connect Broker',
              redirectUris: [options.staticRedirectUri],
            },
          ]
        : [],
    resources: [{ identifier: url, scope: UPSTREAM_SCOPE, accessTokenTtlSeconds: 600 }],
    subjectOf: (login) => `up-${login}`,
    render,
  });
  const provider = new Provider(issuer, {
    ...base,
    ...(options.registration === 'cimd' && {
      fetch: (target: string | URL, init: RequestInit) => {
        seen.documentFetches.push(String(target));
        return options.fetch(target, init);
      },
    }),
    features: {
      ...base.features,
      ...(options.registration !== 'static' && {
        registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      }),
      ...(options.registration === 'cimd' && { clientIdMetadataDocument: { enabled: true, ack: 'draft-02' } }),
    },
  });
  provider.use(providerHeaders([]));
  const [signingJwk] = keys.jwks.keys;
  provider.use(async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    const body = ctx.body as { access_token?: unknown } | undefined;
    if (ctx.oidc?.route === 'token' && seen.tokenAudience !== undefined && typeof body?.access_token === 'string') {
      const claims = decodeJwt(body.access_token);
      body.access_token = await new SignJWT({ ...claims, aud: seen.tokenAudience })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: signingJwk!.kid! })
        .sign(await importJWK(signingJwk!, 'ES256'));
    }
    const params = ctx.oidc?.params;
    if (ctx.oidc?.route === 'authorization' && params) seen.authorizations.push({ ...params });
    if (ctx.oidc?.route === 'token' && params)
      seen.tokenRequests.push({
        grantType: params['grant_type'],
        resource: params['resource'],
        clientId: ctx.oidc.client?.clientId,
        basic: /^Basic /i.test(
          (ctx as unknown as { headers: Record<string, string | undefined> }).headers['authorization'] ?? '',
        ),
      });
  });
  provider.on('registration_create.success', (_ctx, client) =>
    seen.registrations.push((client as { clientId: string }).clientId),
  );

  const app = express();
  app.disable('x-powered-by');
  app.use(
    '/interaction',
    createInteractionRouter({
      provider,
      render,
      brand: 'Upstream Notes',
      origin: authServer.origin,
      consent: 'prompt',
      staticClientIds: new Set([staticClient.id]),
      subjectOf: (login) => `up-${login}`,
    }),
  );
  app.use(options.issuerPath ?? '/', provider.callback());
  app.use(pageErrors({ logger, render, brand: 'Upstream Notes' }));
  authServer.setHandler((req, res) => {
    seen.authRequests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      authorization: !!req.headers.authorization,
    });
    app(req, res);
  });

  mcpServer.setHandler(
    mcpListener({
      url,
      issuer,
      jwks: toPublicJwks(keys),
      metadata: options.metadata,
      era: options.era ?? '2026-07-28',
      eliciting: options.eliciting ?? false,
      ...(options.listTtlMs !== undefined && { listTtlMs: options.listTtlMs }),
      ...(options.publicListTtlMs !== undefined && { publicListTtlMs: options.publicListTtlMs }),
      streams: options.streams ?? false,
      anonymousList: options.anonymousList ?? false,
      seen,
    }),
  );
  return {
    url,
    issuer,
    staticClient,
    provider,
    ...seen,
    // Read by the listener on each call: a test's assignment must reach it.
    get behaviour() {
      return seen.behaviour;
    },
    set behaviour(next) {
      seen.behaviour = next;
    },
    get authorizationServers() {
      return seen.authorizationServers;
    },
    get tokenAudience() {
      return seen.tokenAudience;
    },
    set tokenAudience(next) {
      seen.tokenAudience = next;
    },
    set authorizationServers(next) {
      seen.authorizationServers = next;
    },
    stopMcp: () => mcpServer.close(),
    close: async () => {
      // The MCP server may be stopped already (stopMcp).
      await Promise.all([mcpServer.close().catch(() => undefined), authServer.close()]);
    },
  };
}

function mcpListener(options: {
  url: string;
  issuer: string;
  jwks: ReturnType<typeof toPublicJwks>;
  metadata: MetadataPlacement;
  era: '2026-07-28' | '2025-11-25';
  eliciting: boolean;
  listTtlMs?: number;
  publicListTtlMs?: number;
  streams: boolean;
  anonymousList: boolean;
  seen: Pick<
    UpstreamMcp,
    | 'requests'
    | 'authorizationServers'
    | 'accepted'
    | 'bearers'
    | 'calls'
    | 'methods'
    | 'headerNames'
    | 'responses'
    | 'gates'
    | 'behaviour'
    | 'initializes'
    | 'sessions'
    | 'created'
    | 'answers'
  >;
}): (req: IncomingMessage, res: ServerResponse) => void {
  const origin = new URL(options.url).origin;
  const pathInserted = '/.well-known/oauth-protected-resource/mcp';
  const metadataPath = options.metadata === 'root' ? '/.well-known/oauth-protected-resource' : pathInserted;
  // Read on each request: a test's change of the servers it names reaches the next discovery.
  const document = () => ({
    resource: options.url,
    authorization_servers: options.seen.authorizationServers,
    scopes_supported: [UPSTREAM_SCOPE],
  });
  const keys = createLocalJWKSet(options.jwks);
  const bearer = {
    requiredScopes: [UPSTREAM_SCOPE],
    ...(options.metadata === 'challenge' && { resourceMetadataUrl: `${origin}${metadataPath}` }),
    expectedResource: new URL(options.url),
    verifier: {
      async verifyAccessToken(token: string): Promise<AuthInfo> {
        try {
          const { payload } = await jwtVerify(token, keys, {
            issuer: options.issuer,
            audience: options.url,
            requiredClaims: ['sub', 'exp'],
          });
          options.seen.accepted.push({ sub: payload.sub!, aud: payload.aud, clientId: String(payload['client_id']) });
          return {
            token,
            clientId: String(payload['client_id']),
            scopes: typeof payload['scope'] === 'string' ? payload['scope'].split(' ') : [],
            expiresAt: payload.exp!,
            resource: new URL(options.url),
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
  const build = (authInfo: AuthInfo | undefined) => {
    const server = new McpServer(
      { name: 'upstream-notes', version: 'test' },
      {
        capabilities: { tools: {} },
        ...(options.listTtlMs !== undefined && {
          cacheHints: { 'tools/list': { ttlMs: options.listTtlMs, cacheScope: 'private' as const } },
        }),
        ...(options.publicListTtlMs !== undefined && {
          cacheHints: { 'tools/list': { ttlMs: options.publicListTtlMs, cacheScope: 'public' as const } },
        }),
      },
    );
    const client = authInfo?.clientId ?? 'unknown';
    const sub = String(authInfo?.extra?.['sub'] ?? 'unknown');
    server.registerTool(
      'whoami',
      { description: 'The client the token was issued to.', inputSchema: z.strictObject({}) },
      () => ({
        content: [{ type: 'text', text: client }],
      }),
    );
    server.registerTool(
      'create_note',
      {
        title: 'Create a note',
        description: 'Creates a note with this title for the signed-in user.',
        inputSchema: z.strictObject({ title: z.string().min(1), tags: z.array(z.string()).optional() }),
        annotations: { destructiveHint: false },
      },
      ({ title }) => {
        options.seen.created.push(title);
        return {
          content: [{ type: 'text', text: `Created "${title}" for ${sub}.` }],
          structuredContent: { title, owner: sub },
        };
      },
    );
    server.registerTool(
      'fail_note',
      { description: 'Always answers a tool error.', inputSchema: z.strictObject({}) },
      () => ({ isError: true, content: [{ type: 'text', text: 'The notebook is read-only.' }] }),
    );
    // Asks for a form before it acts (MCP 2026-07-28, input_required), with a requestState of its own;
    // the retry that brings the answer (and that state back) gets it.
    const answered = (tool: string, ctx: ServerContext) => {
      const responses = ctx.mcpReq.inputResponses;
      if (responses === undefined) return undefined;
      options.seen.answers.push({ tool, inputResponses: responses, requestState: ctx.mcpReq.requestState() });
      return responses;
    };
    server.registerTool(
      'ask_color',
      { description: 'Asks which colour, then answers it.', inputSchema: z.strictObject({}) },
      (_args, ctx) => {
        const color = acceptedContent<{ color?: unknown }>(answered('ask_color', ctx), 'color')?.color;
        if (typeof color === 'string' && ctx.mcpReq.requestState() === 'asked-color')
          return { content: [{ type: 'text', text: `Colour: ${color}` }] };
        return inputRequired({
          inputRequests: {
            color: {
              method: 'elicitation/create',
              params: {
                mode: 'form',
                message: 'Which colour?',
                requestedSchema: { type: 'object', properties: { color: { type: 'string' } } },
              },
            },
          },
          requestState: 'asked-color',
        });
      },
    );
    if (options.eliciting) {
      server.registerTool(
        'ask_secret',
        { description: 'Asks for a password in a form.', inputSchema: z.strictObject({}) },
        (_args, ctx) =>
          answered('ask_secret', ctx)
            ? { content: [{ type: 'text', text: 'Got the password.' }] }
            : inputRequired({
                inputRequests: {
                  login: {
                    method: 'elicitation/create',
                    params: {
                      mode: 'form',
                      message: 'Sign in again',
                      requestedSchema: {
                        type: 'object',
                        properties: { password: { type: 'string', title: 'Password' } },
                      },
                    },
                  },
                },
              }),
      );
      server.registerTool(
        'open_link',
        { description: 'Asks the user to open a link.', inputSchema: z.strictObject({ url: z.string() }) },
        ({ url }, ctx) =>
          inputResponse(answered('open_link', ctx), 'visit').kind === 'elicit'
            ? { content: [{ type: 'text', text: 'Opened.' }] }
            : inputRequired({
                inputRequests: { visit: inputRequired.elicitUrl({ message: 'Finish at our site', url }) },
              }),
      );
    }
    // A tool only alice has: a list that differs per user, which the broker must keep apart.
    if (sub === 'up-alice' && options.publicListTtlMs === undefined)
      server.registerTool(
        'alice_diary',
        { description: "Reads alice's diary.", inputSchema: z.strictObject({}) },
        () => ({ content: [{ type: 'text', text: 'Dear diary.' }] }),
      );
    return server;
  };
  const serve =
    options.era === '2025-11-25'
      ? sessionful(build, options.seen, options.streams)
      : toNodeHandler(createMcpHandler((ctx) => build(ctx.authInfo), { legacy: 'reject' }));
  return (req, res) => {
    const path = req.url?.split('?')[0] ?? '';
    options.seen.requests.push(`${req.method} ${path}`);
    if (req.method === 'GET' && path === metadataPath)
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(document()));
    if (path !== '/mcp') return void res.writeHead(404).end();
    if (req.headers.authorization !== undefined) options.seen.bearers.push(req.headers.authorization);
    for (const name of Object.keys(req.headers)) options.seen.headerNames.add(name);
    void readBody(req).then(async (body) => {
      let parsed: unknown;
      try {
        parsed = body === '' ? undefined : JSON.parse(body);
      } catch {
        parsed = undefined;
      }
      let auth: AuthInfo | undefined;
      const listing = ['server/discover', 'tools/list'].includes(String((parsed as { method?: unknown })?.method));
      try {
        auth =
          options.anonymousList && listing && req.headers.authorization === undefined
            ? undefined
            : await verifyBearerToken(req.headers.authorization, bearer);
      } catch (err) {
        const answer = bearerAuthChallengeResponse(err, bearer);
        return void res.writeHead(answer.status, Object.fromEntries(answer.headers)).end(await answer.text());
      }
      const message = parsed as { method?: unknown; params?: { name?: unknown; arguments?: unknown } } | undefined;
      if (req.method === 'POST')
        options.seen.methods.push(typeof message?.method === 'string' ? message.method : 'response');
      if (req.method === 'POST' && message && typeof message.method !== 'string')
        options.seen.responses.push(message as Record<string, unknown>);
      const { listDelayMs } = options.seen.behaviour;
      if (message?.method === 'tools/list' && listDelayMs)
        await new Promise((resolve) => setTimeout(resolve, listDelayMs));
      if (message?.method === 'tools/call') {
        options.seen.calls.push({
          tool: String(message.params?.name),
          args: message.params?.arguments,
          sub: auth?.extra?.['sub'] as string | undefined,
        });
        const title = (message.params?.arguments as { title?: unknown } | undefined)?.title;
        const { onlyTitle, slowMs } = options.seen.behaviour;
        const mode = onlyTitle === undefined || onlyTitle === title ? options.seen.behaviour.mode : 'normal';
        const gate = typeof title === 'string' ? options.seen.gates.get(title) : undefined;
        if (gate) await gate;
        if (mode === 'garbage')
          return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc": tr');
        if (mode === 'reset') return void req.socket.destroy();
        // As if the user revoked the grant: this token is refused from now on.
        if (mode === 'refuse') {
          const answer = bearerAuthChallengeResponse(
            new OAuthError(OAuthErrorCode.InvalidToken, 'The access token was revoked.'),
            bearer,
          );
          return void res.writeHead(answer.status, Object.fromEntries(answer.headers)).end(await answer.text());
        }
        if (mode === 'slow') await new Promise((resolve) => setTimeout(resolve, slowMs ?? 60_000));
        if (res.destroyed) return;
      }
      await serve(Object.assign(req, { auth }) as NodeIncomingMessageLike, res, parsed);
    });
  };
}

/**
 * A 2025-11-25 server with sessions, as the SDK's Streamable HTTP transport keeps them: initialize
 * makes one (for the token it came with), later requests name it in Mcp-Session-Id, one it does
 * not know is answered 404.
 */
function sessionful(
  build: (authInfo: AuthInfo | undefined) => McpServer,
  seen: Pick<UpstreamMcp, 'initializes' | 'sessions'>,
  streams: boolean,
) {
  return async (req: NodeIncomingMessageLike & { auth?: AuthInfo }, res: ServerResponse, parsed: unknown) => {
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const transport = seen.sessions.get(id);
      if (!transport)
        return void res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
      return transport.handleRequest(req as IncomingMessage, res, parsed);
    }
    if ((parsed as { method?: unknown } | undefined)?.method !== 'initialize')
      return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"initialize first"}');
    seen.initializes.push(String(req.auth?.extra?.['sub']));
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: !streams,
      onsessioninitialized: (sessionId) => {
        seen.sessions.set(sessionId, transport);
      },
    });
    await build(req.auth).connect(transport);
    await transport.handleRequest(req as IncomingMessage, res, parsed);
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
