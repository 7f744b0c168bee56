import express, { type Request, type Response, Router } from 'express';
import { parse as parseCookies, serialize as serializeCookie } from 'cookie';
import { z } from 'zod';
import { InvalidInputError, NotFoundError } from '../errors/appError.js';
import type { Render } from '../web/render.js';
import {
  type GithubAuthState,
  type GithubOAuthApp,
  type PendingAuthorization,
  randomId,
  redirectAllowed,
  remember,
} from './devGithubAuthState.js';
import type { GithubStore } from './devGithubStore.js';
import { withFormActionTarget } from './devProviderPages.js';
import { demoUsersText, verifyDevCredentials } from './devUsers.js';

export interface GithubOAuthDeps {
  origin: string;
  apps: readonly GithubOAuthApp[];
  state: GithubAuthState;
  store: GithubStore;
  render: Render;
}

export const GITHUB_BRAND = 'GitHub (development)';
const SESSION_COOKIE = 'github_session';
const INTERACTION_COOKIE = 'github_interaction';
const REQUEST_TTL_MS = 10 * 60_000;
// GitHub's codes expire after ten minutes ("Authorizing OAuth apps", step 2).
const CODE_TTL_MS = 10 * 60_000;
const DOCS = 'https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors';

/** The scopes this emulator knows, as GitHub's consent page would describe them. */
export const GITHUB_SCOPES: Readonly<Record<string, string>> = {
  repo: 'Full control of repositories, including their issues',
  public_repo: 'Access public repositories',
  'read:user': 'Read your profile data',
  'user:email': 'Access your email addresses (read-only)',
};

// GitHub ignores parameters it does not know (response_type among them), so this schema is not strict.
const AuthorizeQuerySchema = z.object({
  client_id: z.string().max(100),
  redirect_uri: z.string().max(2000).optional(),
  scope: z.string().max(1000).optional(),
  state: z.string().max(2000).optional(),
  login: z.string().max(100).optional(),
  code_challenge: z
    .string()
    .regex(/^[A-Za-z0-9\-._~]{43,128}$/)
    .optional(),
  code_challenge_method: z.string().optional(),
});
const UidSchema = z.strictObject({ uid: z.string().regex(/^[0-9a-f]{40}$/) });
const LoginFormSchema = z.strictObject({ login: z.string().max(100), password: z.string().max(200) });
const EmptyFormSchema = z.strictObject({});

/**
 * GitHub's web application flow for OAuth Apps: GET /login/oauth/authorize,
 * then our own sign-in and "Authorize" pages. An interaction is bound to the
 * browser that started it by a cookie scoped to its path (SameSite=Lax), and
 * its POSTs must come from this origin.
 */
export function createGithubAuthorizeRouter(deps: GithubOAuthDeps): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 });

  router.get('/login/oauth/authorize', (req, res) => {
    const query = parseOr404(AuthorizeQuerySchema, req.query);
    const app = deps.apps.find((a) => a.clientId === query.client_id);
    if (!app) throw new NotFoundError('No OAuth App has this client_id.');
    const redirectUri = query.redirect_uri ?? app.callbackUrl;
    // A redirect_uri that is not the app's goes nowhere near it: the error goes to the registered callback.
    if (!redirectAllowed(app.callbackUrl, redirectUri)) {
      redirectWithError(
        res,
        app.callbackUrl,
        query.state,
        'redirect_uri_mismatch',
        'The redirect_uri MUST match the registered callback URL for this application.',
      );
      return;
    }
    if (query.code_challenge !== undefined && query.code_challenge_method !== 'S256') {
      redirectWithError(res, redirectUri, query.state, 'invalid_request', 'code_challenge_method must be S256.');
      return;
    }
    const uid = randomId();
    remember(
      deps.state.pending,
      uid,
      {
        uid,
        app,
        redirectUri,
        scopes: normalizeScopes(query.scope ?? ''),
        state: query.state,
        codeChallenge: query.code_challenge,
        login: query.login,
        expiresAt: deps.state.now() + REQUEST_TTL_MS,
      },
      deps.state.now(),
    );
    const path = interactionPath(uid);
    res.append(
      'Set-Cookie',
      serializeCookie(INTERACTION_COOKIE, uid, {
        path,
        httpOnly: true,
        secure: true,
        sameSite: 'lax',
        maxAge: REQUEST_TTL_MS / 1000,
      }),
    );
    res.redirect(303, path);
  });

  router.get('/login/oauth/interaction/:uid', async (req, res) => {
    const pending = pendingOf(deps, req);
    const login = signedIn(deps, req);
    if (!login) {
      sendPage(res, pending, loginPage(deps, pending, { login: pending.login ?? '' }));
      return;
    }
    const granted = deps.store.grantedScopes(login, pending.app.clientId);
    // Like GitHub, an app the user already authorized for these scopes is sent straight back.
    if (granted && pending.scopes.every((s) => granted.includes(s))) {
      await finish(deps, res, pending, login, granted);
      return;
    }
    sendPage(res, pending, consentPage(deps, pending, login));
  });

  router.post('/login/oauth/interaction/:uid/login', form, (req, res) => {
    const pending = pendingOf(deps, req);
    const body = parseForm(LoginFormSchema, req.body);
    const user = verifyDevCredentials(body.login, body.password);
    if (!user) {
      const error = 'Incorrect username or password.';
      sendPage(res.status(400), pending, loginPage(deps, pending, { login: body.login, error }));
      return;
    }
    const sessionId = randomId(32);
    deps.state.sessions.set(sessionId, user.login);
    res.append(
      'Set-Cookie',
      serializeCookie(SESSION_COOKIE, sessionId, { path: '/', httpOnly: true, secure: true, sameSite: 'lax' }),
    );
    res.redirect(303, interactionPath(pending.uid));
  });

  router.post('/login/oauth/interaction/:uid/authorize', form, async (req, res) => {
    const pending = pendingOf(deps, req);
    parseForm(EmptyFormSchema, req.body);
    const login = signedIn(deps, req);
    if (!login) throw expired();
    const scopes = [...new Set([...(deps.store.grantedScopes(login, pending.app.clientId) ?? []), ...pending.scopes])];
    await deps.store.saveGrant(login, pending.app.clientId, scopes);
    await finish(deps, res, pending, login, scopes);
  });

  router.post('/login/oauth/interaction/:uid/deny', form, (req, res) => {
    const pending = pendingOf(deps, req);
    parseForm(EmptyFormSchema, req.body);
    deps.state.pending.delete(pending.uid);
    redirectWithError(
      res,
      pending.redirectUri,
      pending.state,
      'access_denied',
      'The user has denied your application access.',
    );
  });

  return router;
}

/** GitHub's scope parameter is space-delimited; it also takes commas. Unknown scopes are dropped, as GitHub does. */
export function normalizeScopes(scope: string): string[] {
  return [...new Set(scope.split(/[\s,]+/).filter((s) => s in GITHUB_SCOPES))];
}

async function finish(
  deps: GithubOAuthDeps,
  res: Response,
  pending: PendingAuthorization,
  login: string,
  granted: string[],
) {
  deps.state.pending.delete(pending.uid);
  const code = randomId();
  remember(
    deps.state.codes,
    code,
    {
      clientId: pending.app.clientId,
      login,
      // The token carries what was asked for and granted, as GitHub's does.
      scopes: granted.filter((s) => pending.scopes.includes(s)),
      redirectUri: pending.redirectUri,
      codeChallenge: pending.codeChallenge,
      expiresAt: deps.state.now() + CODE_TTL_MS,
    },
    deps.state.now(),
  );
  const target = new URL(pending.redirectUri);
  target.searchParams.set('code', code);
  if (pending.state !== undefined) target.searchParams.set('state', pending.state);
  res.redirect(302, target.href);
}

function redirectWithError(
  res: Response,
  redirectUri: string,
  state: string | undefined,
  error: string,
  description: string,
) {
  const target = new URL(redirectUri);
  target.searchParams.set('error', error);
  target.searchParams.set('error_description', description);
  target.searchParams.set('error_uri', `${DOCS}#${error.replaceAll('_', '-')}`);
  if (state !== undefined) target.searchParams.set('state', state);
  res.redirect(302, target.href);
}

function interactionPath(uid: string): string {
  return `/login/oauth/interaction/${uid}`;
}

function pendingOf(deps: GithubOAuthDeps, req: Request): PendingAuthorization {
  const { uid } = UidSchema.safeParse(req.params).data ?? {};
  const cookieUid = parseCookies(req.get('cookie') ?? '')[INTERACTION_COOKIE];
  const origin = req.get('origin');
  if (req.method === 'POST' && origin !== undefined && origin !== deps.origin)
    throw new InvalidInputError('This form was posted from another site.');
  const pending = uid === undefined || cookieUid !== uid ? undefined : deps.state.pending.get(uid);
  if (!pending || pending.expiresAt <= deps.state.now()) throw expired();
  return pending;
}

function signedIn(deps: GithubOAuthDeps, req: Request): string | undefined {
  const sessionId = parseCookies(req.get('cookie') ?? '')[SESSION_COOKIE];
  return sessionId === undefined ? undefined : deps.state.sessions.get(sessionId);
}

function loginPage(
  deps: GithubOAuthDeps,
  pending: PendingAuthorization,
  model: { login: string; error?: string },
): string {
  return deps.render('dev/login', {
    title: 'Sign in',
    brand: GITHUB_BRAND,
    clientName: pending.app.name,
    action: `${interactionPath(pending.uid)}/login`,
    abortAction: `${interactionPath(pending.uid)}/deny`,
    demoUsers: demoUsersText(),
    ...model,
  });
}

function consentPage(deps: GithubOAuthDeps, pending: PendingAuthorization, login: string): string {
  return deps.render('dev/githubConsent', {
    title: `Authorize ${pending.app.name}`,
    brand: GITHUB_BRAND,
    clientName: pending.app.name,
    signedInAs: login,
    scopes: pending.scopes.map((name) => ({ name, description: GITHUB_SCOPES[name] ?? name })),
    returnsTo: new URL(pending.redirectUri).origin,
    action: `${interactionPath(pending.uid)}/authorize`,
    denyAction: `${interactionPath(pending.uid)}/deny`,
  });
}

// The forms end in a redirect to the app, which browsers check against form-action.
function sendPage(res: Response, pending: PendingAuthorization, html: string): void {
  const csp = res.getHeader('content-security-policy');
  if (typeof csp === 'string') res.setHeader('Content-Security-Policy', withFormActionTarget(csp, pending.redirectUri));
  res.type('html').send(html);
}

function expired(): InvalidInputError {
  return new InvalidInputError(
    'This authorization request has expired or was already used. Start again from the application.',
  );
}

function parseOr404<T>(schema: z.ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input);
  // GitHub answers a malformed authorization request with its 404 page.
  if (!result.success) throw new NotFoundError('This authorization request is not valid.', { cause: result.error });
  return result.data;
}

function parseForm<T>(schema: z.ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input ?? {});
  if (!result.success) throw new InvalidInputError('The form was not filled in as expected.', { cause: result.error });
  return result.data;
}
