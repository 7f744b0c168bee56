import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import { authRoutes, DEFAULT_LOGIN_RATE_LIMIT } from './web/authRoutes.js';
import type { BrokerDeps } from './broker/brokerDeps.js';
import { connectRoutes } from './connect/connectRoutes.js';
import type { MigrationFile } from './db/migrate.js';
import type { Pool } from './db/pool.js';
import { NotFoundError } from './errors/appError.js';
import { healthRoutes } from './health/healthRoutes.js';
import type { LoginCookies } from './auth/loginCookie.js';
import type { OperatorPolicy } from './auth/operatorRole.js';
import type { OpsDeps } from './ops/opsDeps.js';
import { opsRoutes } from './ops/opsRoutes.js';
import type { Metrics } from './metrics/metrics.js';
import { metricsRoutes, type MetricsAccess } from './metrics/metricsRoutes.js';
import { protectedResourceRoutes } from './mcp/protectedResourceRoutes.js';
import type { OidcClient } from './oauth/oauthClient.js';
import type { Clock } from './shared/clock.js';
import type { Logger } from './shared/logger.js';
import { errorHandler, requestId } from './web/middleware/requestContext.js';
import { securityHeaders } from './web/middleware/security.js';
import type { RateLimit } from './web/middleware/rateLimit.js';
import type { Render } from './web/render.js';
import { webRoutes } from './web/webRoutes.js';

export interface AppDeps {
  pool: Pool;
  logger: Logger;
  clock: Clock;
  render: Render;
  oidc: OidcClient;
  migrations: MigrationFile[];
  publicUrl: URL;
  mcpResourceUrl: string;
  sessionTtlSeconds: number;
  /** Seals sign-in transactions into the browser (nothing is stored before the user comes back). */
  logins: LoginCookies;
  /** GET /login and its callback, per client address and instance (default: a burst of 60, then 60 a minute). */
  loginRateLimit?: RateLimit;
  /** For the protected resource metadata of the MCP endpoint. */
  mcp: { issuer: string; scope: string };
  broker: BrokerDeps;
  /** Origins our forms may redirect to: the providers' authorization servers (CSP form-action). */
  formActionOrigins: readonly string[];
  /** Who is an operator (OPERATOR_ROLE_CLAIM, OPERATOR_ROLE). */
  operators: OperatorPolicy;
  ops: OpsDeps;
  metrics: Metrics;
  metricsAccess: MetricsAccess;
}

const publicDir = fileURLToPath(new URL('../public/', import.meta.url));

/** The broker's HTTP application. Every dependency arrives here; nothing is constructed. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.set('query parser', 'simple');

  app.use(requestId());
  app.use(securityHeaders({ formActionOrigins: deps.formActionOrigins }));
  app.use(healthRoutes(deps));
  app.use(metricsRoutes({ metrics: deps.metrics, access: deps.metricsAccess }));
  app.use(
    protectedResourceRoutes({ mcpResourceUrl: deps.mcpResourceUrl, issuer: deps.mcp.issuer, scope: deps.mcp.scope }),
  );
  app.use('/static', express.static(publicDir, { index: false, fallthrough: false, maxAge: '1h' }));
  app.use(
    authRoutes({
      ...deps,
      callbackUrl: new URL('/auth/callback', deps.publicUrl).href,
      loginRateLimit: deps.loginRateLimit ?? DEFAULT_LOGIN_RATE_LIMIT,
    }),
  );
  app.use(connectRoutes({ broker: deps.broker, render: deps.render, sessionTtlSeconds: deps.sessionTtlSeconds }));
  app.use('/ops', opsRoutes(deps));
  app.use(webRoutes(deps));

  app.use((_req, _res, next) => next(new NotFoundError('There is no page here.')));
  app.use(errorHandler(deps));
  return app;
}
