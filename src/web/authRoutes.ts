import { Router } from 'express';
import { z } from 'zod';
import type { Config } from '../config/config.js';
import { ForbiddenError } from '../errors/appError.js';
import { isValidCsrf, requireSameOrigin } from './middleware/csrf.js';
import { clientAddressOf } from '../shared/clientAddress.js';
import type { Logger } from '../shared/logger.js';
import { rateLimitByAddress } from './middleware/rateLimit.js';
import { parseInput } from './parse.js';
import { formBody } from './requestBody.js';
import { readLoginCookie, writeLoginCookie } from '../auth/loginCookie.js';
import { clearSessionCookie, readSessionCookie, writeSessionCookie } from '../auth/sessionCookie.js';
import { beginSignIn, completeSignIn, LOGIN_TTL_MS, signOut, type SignInDeps } from '../auth/signIn.js';

// A local path only: "/x", never "//host" or "/\host" (open-redirect guard).
const localPath = z
  .string()
  .max(1024) // it travels in the sealed login cookie, which must stay under 4 KB
  .regex(/^\/(?![/\\])[\x21-\x7e]*$/, 'must be a path on this site');

// reauth=1: authenticate again at the identity provider, not on its session (before an operator action).
const loginQuery = z.strictObject({ return_to: localPath.optional(), reauth: z.literal('1').optional() });
// The callback may carry extra parameters (iss, session_state…); openid-client reads the URL itself.
const callbackQuery = z.object({
  state: z.string().max(512).optional(),
  code: z.string().max(4096).optional(),
  error: z.string().max(256).optional(),
});
const logoutBody = z.strictObject({ _csrf: z.string().max(128) });

export interface AuthRoutesDeps extends SignInDeps {
  /** `login.rateLimit` is per client address, for GET /login and the callback together. */
  settings: Pick<Config, 'http' | 'session' | 'login' | 'operators'>;
  logger: Logger;
}

/** GET /login, GET /auth/callback, POST /logout. */
export function authRoutes(deps: AuthRoutesDeps): Router {
  const router = Router();
  const { publicUrl } = deps.settings.http;
  // Both ends of a sign-in are open to anyone: one bucket per address bounds what a caller can make us do.
  const limited = rateLimitByAddress(deps.settings.login.rateLimit, {
    addressOf: (req) => clientAddressOf(req, deps.settings.http.trustProxy),
    now: () => deps.clock.now().getTime(),
    logger: deps.logger,
  });
  const loginMaxAge = LOGIN_TTL_MS / 1000;

  router.get('/login', limited, async (req, res) => {
    const { return_to: returnTo = '/', reauth } = parseInput(loginQuery, req.query, 'query');
    const { redirect, loginCookie } = await beginSignIn(deps, readLoginCookie(req), returnTo, {
      reauthenticate: reauth === '1',
    });
    writeLoginCookie(res, loginCookie, loginMaxAge);
    res.redirect(303, redirect.href);
  });

  router.get('/auth/callback', limited, async (req, res) => {
    parseInput(callbackQuery, req.query, 'query');
    const currentUrl = new URL(req.originalUrl, publicUrl);
    const cookies = { session: readSessionCookie(req), login: readLoginCookie(req) };
    const { newCookie, returnTo, loginCookie } = await completeSignIn(deps, cookies, currentUrl).catch(
      (err: unknown) => {
        // A response that failed is spent too: the browser forgets its sign-in, a retry starts again.
        const state = currentUrl.searchParams.get('state');
        if (state && cookies.login)
          writeLoginCookie(res, deps.logins.take(cookies.login, state, deps.clock.now()).rest, loginMaxAge);
        throw err;
      },
    );
    writeLoginCookie(res, loginCookie, loginMaxAge);
    writeSessionCookie(res, newCookie, deps.settings.session.ttlSeconds);
    res.redirect(303, returnTo);
  });

  router.post('/logout', requireSameOrigin(publicUrl.origin), formBody({ limit: 2048 }), async (req, res) => {
    const body = parseInput(logoutBody, req.body, 'form');
    const cookie = readSessionCookie(req);
    if (!isValidCsrf(cookie, body._csrf))
      throw new ForbiddenError('This form has expired. Reload the page and try again.');
    await signOut(deps, cookie);
    clearSessionCookie(res);
    res.redirect(303, '/');
  });

  return router;
}
