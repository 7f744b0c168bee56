import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { toHttp } from '../../errors/toHttp.js';
import { routeLabel } from '../../metrics/routeLabel.js';
import type { Logger } from '../../shared/logger.js';
import type { Render } from '../render.js';
import { mustCloseConnection } from '../requestBody.js';
import { errorTitleOf } from '../errorTitle.js';

declare module 'express-serve-static-core' {
  interface Request {
    id: string;
  }
}

/** Every request gets an id; it is echoed in `X-Request-Id` and in every error body. */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    req.id = randomUUID();
    res.setHeader('X-Request-Id', req.id);
    next();
  };
}

/**
 * The error handler, mounted last. Negotiates JSON or HTML like oidc-provider;
 * unexposed errors are logged with their cause and answered generically.
 */
export function errorHandler(deps: {
  logger: Logger;
  render: Render;
  /** The client's address for the log line (shared/clientAddress.ts). */
  addressOf: (req: IncomingMessage) => string;
}): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const mapped = toHttp(err, req.id);
    // The route template, not the path: a connect link's handle is a bearer secret.
    if (mapped.log)
      deps.logger.error(
        { err, requestId: req.id, method: req.method, route: routeLabel(req.path), clientAddress: deps.addressOf(req) },
        'request failed',
      );
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(mapped.status);
    if (mustCloseConnection(req)) res.setHeader('Connection', 'close');
    if (mapped.headers) res.set(mapped.headers);
    if (req.accepts(['json', 'html']) === 'html') {
      res
        .type('html')
        .send(deps.render('error', { title: errorTitleOf(mapped.status), ...mapped.body, status: mapped.status }));
    } else {
      res.json(mapped.body);
    }
  };
}
