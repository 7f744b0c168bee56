import { InvalidInputError } from '../errors/appError.js';
import type { Config } from '../config/config.js';
import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import type { OidcClient } from '../oauth/oauthClient.js';
import type { Clock } from '../shared/clock.js';
import { digestOf, randomToken } from '../shared/tokens.js';
import type { LoginCookies } from './loginCookie.js';
import { hasOperatorRole } from './operatorRole.js';
import { deleteSession, findActiveSession, insertSession, type WebSession } from './webSessionRepo.js';

export interface SignInDeps {
  pool: Pool;
  clock: Clock;
  oidc: OidcClient;
  /** The exact redirect URI registered with the issuer. */
  callbackUrl: string;
  /** How long a session lasts (SESSION_TTL_SECONDS) and who is an operator, as loadConfig parsed them. */
  settings: Pick<Config, 'session' | 'operators'>;
  /** Seals sign-in transactions into the browser's login cookie. */
  logins: LoginCookies;
}

export const LOGIN_TTL_MS = 10 * 60 * 1000;

export interface CurrentSession {
  cookie: string;
  session: WebSession;
}

/** The browser's session for this cookie, if it is live. */
export async function currentSession(
  deps: Pick<SignInDeps, 'pool' | 'clock'>,
  cookie: string | undefined,
): Promise<CurrentSession | undefined> {
  if (!cookie) return undefined;
  const session = await findActiveSession(deps.pool, digestOf(cookie), deps.clock.now());
  return session ? { cookie, session } : undefined;
}

/**
 * Starts an OIDC sign-in. Writes nothing to the database: the transaction is
 * returned as the new value of the browser's sealed login cookie (see
 * loginCookie.ts), so only this browser can finish it.
 */
export async function beginSignIn(
  deps: SignInDeps,
  loginCookie: string | undefined,
  returnTo: string,
): Promise<{ redirect: URL; loginCookie: string }> {
  const login = await deps.oidc.beginLogin({ redirectUri: deps.callbackUrl, scope: 'openid profile' });
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + LOGIN_TTL_MS);
  return {
    redirect: login.url,
    loginCookie: deps.logins.add(
      loginCookie,
      login.state,
      { codeVerifier: login.codeVerifier, nonce: login.nonce, returnTo, expiresAt },
      now,
    ),
  };
}

/**
 * Finishes a sign-in: takes the login transaction for this state out of the
 * browser's login cookie (same browser, unexpired), lets openid-client check
 * state, PKCE, nonce, issuer and the ID Token (a replayed code fails there
 * too), then replaces any session with a new one bound to the subject (a
 * fresh cookie value, so a planted session id is worthless). Returns the
 * login cookie's new value: what is left of other tabs' sign-ins.
 */
export async function completeSignIn(
  deps: SignInDeps,
  cookies: { session: string | undefined; login: string | undefined },
  currentUrl: URL,
): Promise<{ newCookie: string; returnTo: string; loginCookie: string | undefined }> {
  const state = currentUrl.searchParams.get('state');
  const now = deps.clock.now();
  const { login, rest } = state
    ? deps.logins.take(cookies.login, state, now)
    : { login: undefined, rest: cookies.login };
  if (!state || !login)
    throw new InvalidInputError(
      'This sign-in response was already used, has expired, or was started in another browser. Start again.',
    );
  const verified = await deps.oidc.completeLogin(currentUrl, deps.callbackUrl, {
    state,
    nonce: login.nonce,
    codeVerifier: login.codeVerifier,
  });
  const newCookie = randomToken();
  await withTransaction(deps.pool, async (tx) => {
    if (cookies.session) await deleteSession(tx, digestOf(cookies.session));
    await insertSession(
      tx,
      {
        idDigest: digestOf(newCookie),
        subject: { iss: verified.issuer, sub: verified.subject },
        displayName: verified.displayName,
        operator: hasOperatorRole(verified.claims, deps.settings.operators),
        expiresAt: new Date(now.getTime() + deps.settings.session.ttlSeconds * 1000),
      },
      now,
    );
  });
  return { newCookie, returnTo: login.returnTo, loginCookie: rest };
}

export async function signOut(deps: Pick<SignInDeps, 'pool'>, cookie: string | undefined): Promise<void> {
  if (cookie) await deleteSession(deps.pool, digestOf(cookie));
}
