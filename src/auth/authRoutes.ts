import express, { Router } from 'express';
import { z } from 'zod';
import { ForbiddenError } from '../errors/appError.js';
import { isValidCsrf, requireSameOrigin } from '../web/middleware/csrf.js';
import { parseInput } from '../web/parse.js';
import { clearSessionCookie, readSessionCookie, writeSessionCookie } from './sessionCookie.js';
import { beginSignIn, completeSignIn, signOut, type SignInDeps } from './signIn.js';

// A local path only: "/x", never "//host" or "/\host" (open-redirect guard).
const localPath = z
  .string()
  .max(2000)
  .regex(/^\/(?![/\\])[\x21-\x7e]*$/, 'must be a path on this site');

const loginQuery = z.strictObject({ return_to: localPath.optional() });
// The callback may carry extra parameters (iss, session_state…); openid-client reads the URL itself.
const callbackQuery = z.object({ state: z.string().max(512).optional(), code: z.string().max(4096).optional(), error: z.string().max(256).optional() });
const logoutBody = z.strictObject({ _csrf: z.string().max(128) });

export interface AuthRoutesDeps extends SignInDeps {
  publicUrl: URL;
}

/** GET /login, GET /auth/callback, POST /logout. */
export function authRoutes(deps: AuthRoutesDeps): Router {
  const router = Router();

  router.get('/login', async (req, res) => {
    const { return_to: returnTo = '/' } = parseInput(loginQuery, req.query, 'query');
    const { redirect, newCookie } = await beginSignIn(deps, readSessionCookie(req), returnTo);
    if (newCookie) writeSessionCookie(res, newCookie, 30 * 60);
    res.redirect(303, redirect.href);
  });

  router.get('/auth/callback', async (req, res) => {
    parseInput(callbackQuery, req.query, 'query');
    const currentUrl = new URL(req.originalUrl, deps.publicUrl);
    const { newCookie, returnTo } = await completeSignIn(deps, readSessionCookie(req), currentUrl);
    writeSessionCookie(res, newCookie, deps.sessionTtlSeconds);
    res.redirect(303, returnTo);
  });

  router.post('/logout', requireSameOrigin(deps.publicUrl.origin), express.urlencoded({ extended: false, limit: '2kb' }), async (req, res) => {
    const body = parseInput(logoutBody, req.body, 'form');
    const cookie = readSessionCookie(req);
    if (!isValidCsrf(cookie, body._csrf)) throw new ForbiddenError('This form has expired. Reload the page and try again.');
    await signOut(deps, cookie);
    clearSessionCookie(res);
    res.redirect(303, '/');
  });

  return router;
}
