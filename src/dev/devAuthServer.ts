import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import type { JWK } from 'jose';
import { type Configuration, type KoaContextWithOIDC, Provider } from 'oidc-provider';
import { InvalidInputError } from '../errors/appError.js';
import { toHttp } from '../errors/toHttp.js';
import type { Fetch } from '../shared/httpClient.js';
import type { Logger } from '../shared/logger.js';
import { requestId } from '../web/middleware/requestContext.js';
import { securityHeaders } from '../web/middleware/security.js';
import type { Render } from '../web/render.js';
import { toPublicJwks } from './devAuthKeys.js';
import { createInteractionRouter } from './devInteractions.js';
import { buildProviderConfig, type DevClient, type DevProviderConfigOptions } from './devProviderConfig.js';
import { providerHeaders } from './devProviderPages.js';
import { isLoopbackRedirect } from './devRegistration.js';
import { errorTitleOf } from '../web/errorTitle.js';

/** The provider's options (brand, cookie prefix, keys, clients, resources, subjects, adapter) plus the server's own. */
export interface DevAuthServerOptions extends DevProviderConfigOptions {
  /** e.g. https://127.0.0.1:8444, no trailing slash. */
  issuer: string;
  /** 'implicit' grants every request without a page; 'prompt' shows Allow / Deny. */
  consent: 'implicit' | 'prompt';
  logger: Logger;
  /** Mounted at `/api` on the server's own origin (the Report Service's createReportApi router). */
  api?: RequestHandler;
  /**
   * Any web client may register (RFC 7591) or name its Client ID Metadata Document, with https
   * redirect URIs on `origins` (the development upstream MCP server's authorization server, which
   * the broker registers with as with a real one); `fetch` gets the documents.
   */
  webClients?: { fetch: Fetch; origins: string[] };
}

export interface DevAuthServer {
  /** A node http(s) request listener serving the whole origin. */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  provider: Provider;
  publicJwks(): { keys: JWK[] };
}

const publicDir = fileURLToPath(new URL('../../public/', import.meta.url));

/**
 * A development OAuth 2.0 / OpenID Connect server (oidc-provider) with our own
 * sign-in and consent pages. Development only: its state lives in memory
 * unless `adapter` persists it.
 */
export function createDevAuthServer(options: DevAuthServerOptions): DevAuthServer {
  const origin = new URL(options.issuer).origin;
  const formActionOrigins = [...clientOrigins(options.clients), ...(options.webClients?.origins ?? [])].filter(
    (o) => o !== origin,
  );
  const config = buildProviderConfig(options);
  const provider = new Provider(
    options.issuer,
    options.webClients ? withWebClients(config, options.webClients.fetch) : config,
  );
  provider.use(providerHeaders(formActionOrigins));
  provider.on('server_error', (_ctx, err) => options.logger.error({ err }, 'oidc-provider server error'));
  provider.use(recordRevocations(options.logger));

  const app = express();
  app.disable('x-powered-by');
  app.use(requestId());
  app.use('/static', express.static(publicDir, { index: false }));
  if (options.api) app.use('/api', options.api);
  const interactions = createInteractionRouter({
    provider,
    render: options.render,
    brand: options.brand,
    origin,
    consent: options.consent,
    staticClientIds: new Set(options.clients.map((c) => c.clientId)),
    subjectOf: options.subjectOf,
  });
  app.use('/interaction', ...securityHeaders({ formActionOrigins }), interactions);
  app.use(provider.callback());
  app.use(pageErrors(options));

  return {
    handler: (req, res) => app(req, res),
    provider,
    publicJwks: () => toPublicJwks(options.keys),
  };
}

// Registration open to web clients, and Client ID Metadata Documents (fetched with `fetch`, which
// trusts the development CA), beside the development clients' policy.
function withWebClients(config: Configuration, fetch: Fetch): Configuration {
  return {
    ...config,
    fetch: (target: string | URL, init: RequestInit) => fetch(target, init),
    features: {
      ...config.features,
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
    },
  } as Configuration;
}

// Each RFC 7009 request in the log (never the token): which client, what it named, the answer's status.
function recordRevocations(logger: Logger) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (ctx.oidc?.route !== 'revocation') return;
    const token = ctx.oidc.entities['RefreshToken'] ?? ctx.oidc.entities['AccessToken'];
    logger.info(
      { clientId: ctx.oidc.client?.clientId, tokenKind: token?.kind ?? 'unknown', status: ctx.status },
      'token revocation',
    );
  };
}

// Loopback redirects take any port, so the interaction pages add the one each request names
// (devInteractions.ts sendPage); a CSP source cannot say "any port of [::1]".
function clientOrigins(clients: DevClient[]): string[] {
  const uris = clients
    .flatMap((c) => [...c.redirectUris, ...(c.postLogoutRedirectUris ?? [])])
    .filter((uri) => !isLoopbackRedirect(uri));
  return [...new Set(uris.map((uri) => new URL(uri).origin))];
}

// The interaction pages' error page: the one HTTP mapping (toHttp), our brand.
// body-parser's 4xx errors (an oversized or malformed form) are the caller's fault.
export function pageErrors(deps: { logger: Logger; render: Render; brand: string }): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const status = typeof err === 'object' && err !== null && 'status' in err ? Number(err.status) : 500;
    const error =
      status >= 400 && status < 500 ? new InvalidInputError('The form could not be read.', { cause: err }) : err;
    const mapped = toHttp(error, req.id);
    if (mapped.log) deps.logger.error({ err, requestId: req.id, path: req.path }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const model = { title: errorTitleOf(mapped.status), brand: deps.brand, ...mapped.body, status: mapped.status };
    res.status(mapped.status).type('html').send(deps.render('error', model));
  };
}
