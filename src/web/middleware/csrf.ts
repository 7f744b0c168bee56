import { createHmac } from 'node:crypto';
import type { RequestHandler } from 'express';
import { ForbiddenError } from '../../errors/appError.js';
import { equalInConstantTime } from '../../shared/tokens.js';

/**
 * CSRF token for a browser session: an HMAC keyed by the session cookie's
 * secret value, which a cross-site attacker cannot read. Forms carry it as
 * `_csrf`; state-changing routes check it and the Origin header.
 */
export function csrfTokenFor(sessionCookie: string): string {
  return createHmac('sha256', sessionCookie).update('connect-broker csrf v1').digest('base64url');
}

export function isValidCsrf(sessionCookie: string | undefined, token: unknown): boolean {
  return (
    typeof token === 'string' && sessionCookie !== undefined && equalInConstantTime(csrfTokenFor(sessionCookie), token)
  );
}

/** Refuses a POST whose Origin is present and not ours (browsers send it on every cross-site POST). */
export function requireSameOrigin(publicOrigin: string): RequestHandler {
  return (req, _res, next) => {
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== publicOrigin) {
      next(new ForbiddenError('This form was sent from another site.'));
      return;
    }
    next();
  };
}
