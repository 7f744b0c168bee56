import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import { authRoutes } from './web/authRoutes.js';
import type { BrokerDeps } from './broker/brokerDeps.js';
import type { Config } from './config/config.js';
import { connectRoutes } from './connect/connectRoutes.js';
import { connectionsRoutes } from './web/connectionsRoutes.js';
import type { MigrationFile } from './db/migrate.js';
import type { Pool } from './db/pool.js';
import { NotFoundError } from './errors/appError.js';
import { healthRoutes } from './health/healthRoutes.js';
import type { LoginCookies } from './auth/loginCookie.js';
import type { OpsDeps } from './ops/opsDeps.js';
import { opsRoutes } from './ops/opsRoutes.js';
import type { Metrics } from './metrics/metrics.js';
import { metricsRoutes } from './metrics/metricsRoutes.js';
import { protectedResourceRoutes } from './mcp/protectedResourceRoutes.js';
import type { OidcClient } from './oauth/oauthClient.js';
import { clientAddressOf } from './shared/clientAddress.js';
import type { Clock } from './shared/clock.js';
import type { Logger } from './shared/logger.js';
import { errorHandler, requestId } from './web/middleware/requestContext.js';
import { securityHeaders } from './web/middleware/security.js';
import type { Render } from './web/render.js';
import { webRoutes } from './web/webRoutes.js';
import { clientMetadataRoutes } from './upstream/clientMetadataRoutes.js';

/**
 * The configuration's slices the web app reads, as loadConfig parsed them (`http` carries this
 * instance's public URL): passed through whole, so a route that needs a new setting reads it here.
 */
export type AppSettings = Pick<Config, 'http' | 'session' | 'mcp' | 'login' | 'operators' | 'metrics'>;

export interface AppDeps {
  settings: AppSettings;
  pool: Pool;
  logger: Logger;
  clock: Clock;
  render: Render;
  oidc: OidcClient;
  migrations: MigrationFile[];
  /** The issuer whose tokens /mcp accepts, for the protected resource metadata. */
  issuer: string;
  /** Seals sign-in transactions into the browser (nothing is stored before the user comes back). */
  logins: LoginCookies;
  broker: BrokerDeps;
  /** Origins our forms may redirect to: the providers' authorization servers (CSP form-action), as of each response. */
  formActionOrigins: () => readonly string[];
  ops: OpsDeps;
  metrics: Metrics;
}

const publicDir = fileURLToPath(new URL('../public/', import.meta.url));

/** The broker's HTTP application. Every dependency arrives here; nothing is constructed. */
export function createApp(deps: AppDeps): Express {
  const { http, mcp, session } = deps.settings;
  const app = express();
  app.disable('x-powered-by');
  // Express reads no X-Forwarded-* header: the scheme and host come from PUBLIC_URL alone, and the
  // client's address from clientAddressOf (TRUST_PROXY), which /mcp asks too.
  app.set('trust proxy', false);
  app.set('query parser', 'simple');

  app.use(requestId());
  app.use(securityHeaders({ formActionOrigins: deps.formActionOrigins }));
  // Ready only while a sign-in can start: the issuer's discovery is what /login needs first.
  app.use(healthRoutes({ ...deps, identityProvider: { issuer: deps.issuer, problem: () => deps.oidc.problem() } }));
  app.use(metricsRoutes({ metrics: deps.metrics, access: deps.settings.metrics }));
  app.use(
    protectedResourceRoutes({ mcpResourceUrl: http.mcpResourceUrl, issuer: deps.issuer, scope: mcp.advertisedScope }),
  );
  app.use('/static', express.static(publicDir, { index: false, fallthrough: false, maxAge: '1h' }));
  app.use(clientMetadataRoutes({ providers: deps.broker.providers, publicUrl: http.publicUrl }));
  app.use(authRoutes({ ...deps, callbackUrl: new URL('/auth/callback', http.publicUrl).href }));
  app.use(connectRoutes({ broker: deps.broker, render: deps.render, sessionTtlSeconds: session.ttlSeconds }));
  app.use(connectionsRoutes({ broker: deps.broker, render: deps.render }));
  app.use('/ops', opsRoutes(deps));
  app.use(webRoutes(deps));

  app.use((_req, _res, next) => next(new NotFoundError('There is no page here.')));
  app.use(errorHandler({ ...deps, addressOf: (req) => clientAddressOf(req, http.trustProxy) }));
  return app;
}
