import { Router } from 'express';
import type { Config } from '../config/config.js';
import { ForbiddenError, UnauthenticatedError } from '../errors/appError.js';
import { digestOf, equalInConstantTime } from '../shared/tokens.js';
import type { Metrics } from './metrics.js';

/**
 * Who may read /metrics. With a token (METRICS_TOKEN), only
 * `Authorization: Bearer <token>`. Without one: everyone when
 * `openWithoutToken` (development), no one otherwise (production).
 */
export type MetricsAccess = Config['metrics'];

export interface MetricsRoutesDeps {
  metrics: Metrics;
  access: MetricsAccess;
}

/** GET /metrics: Prometheus text exposition of this instance's registry. */
export function metricsRoutes(deps: MetricsRoutesDeps): Router {
  const router = Router();
  router.get('/metrics', async (req, res) => {
    const { token, openWithoutToken } = deps.access;
    if (token === undefined && !openWithoutToken) {
      throw new ForbiddenError(
        'Metrics are off: set METRICS_TOKEN (32 or more characters) to serve GET /metrics, and scrape with "Authorization: Bearer <METRICS_TOKEN>".',
      );
    }
    if (token !== undefined) {
      const presented = /^Bearer ([\x21-\x7e]+)$/.exec(req.get('authorization') ?? '')?.[1];
      // Digests compared, so neither the token nor its length shows in the timing.
      if (
        presented === undefined ||
        !equalInConstantTime(digestOf(presented).toString('hex'), digestOf(token.reveal()).toString('hex'))
      ) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
        throw new UnauthenticatedError('GET /metrics needs "Authorization: Bearer <METRICS_TOKEN>".');
      }
    }
    const body = await deps.metrics.registry.metrics();
    res.setHeader('Cache-Control', 'no-store');
    res.type(deps.metrics.registry.contentType).send(body);
  });
  return router;
}
