import type { RequestHandler } from 'express';
import helmet from 'helmet';

export interface SecurityOptions {
  /**
   * Origins a form on our pages may post or redirect to, besides our own; a function is asked on
   * each response (an upstream MCP server's authorization server is known only once discovered).
   */
  formActionOrigins?: readonly string[] | (() => readonly string[]);
}

/**
 * Security headers for every response: a strict CSP with no
 * script, no inline style and no framing, HSTS, no referrer, no caching of
 * pages that show who is signed in.
 */
export function securityHeaders(options: SecurityOptions = {}): RequestHandler[] {
  return [
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          baseUri: ["'none'"],
          formAction: ["'self'", ...formActionSources(options.formActionOrigins)],
          frameAncestors: ["'none'"],
          imgSrc: ["'self'"],
          styleSrc: ["'self'"],
          scriptSrc: ["'none'"],
          connectSrc: ["'self'"],
        },
      },
      crossOriginResourcePolicy: { policy: 'same-origin' },
      // same-origin, not no-referrer: with no-referrer Chrome sends `Origin: null` on our own form POSTs,
      // which the Origin checks must refuse. Nothing is sent to other sites either way.
      referrerPolicy: { policy: 'same-origin' },
      strictTransportSecurity: { maxAge: 31536000, includeSubDomains: false },
    }),
    (_req, res, next) => {
      res.setHeader('Cache-Control', 'no-store');
      next();
    },
  ];
}

function formActionSources(origins: SecurityOptions['formActionOrigins']): (string | (() => string))[] {
  if (typeof origins !== 'function') return [...(origins ?? [])];
  return [() => origins().join(' ')];
}
