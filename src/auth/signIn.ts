import { InvalidInputError } from '../errors/appError.js';
import type { Config } from '../config/config.js';
import type { Pool, Queryable } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import type { OidcClient } from '../oauth/oauthClient.js';
import type { Clock } from '../shared/clock.js';
import { digestOf, randomToken } from '../shared/tokens.js';
import type { LoginCookies } from './loginCookie.js';
import { hasOperatorRole, OPERATOR_PROOF_MAX_AGE_SECONDS } from './operatorRole.js';
import { deleteSession, findActiveSession, insertSession, touchSession, type WebSession } from './webSessionRepo.js';

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
/** A session's last use is kept to this granularity: one write per session a minute, not one per request. */
const LAST_SEEN_GRANULARITY_MS = 60 * 1000;

export interface CurrentSession {
  cookie: string;
  session: WebSession;
}

/** The browser's session for this cookie, if it is live (not expired, not revoked); notes its use. */
export async function currentSession(
  deps: Pick<SignInDeps, 'pool' | 'clock'>,
  cookie: string | undefined,
): Promise<CurrentSession | undefined> {
  if (!cookie) return undefined;
  const now = deps.clock.now();
  const session = await findActiveSession(deps.pool, digestOf(cookie), now);
  if (!session) return undefined;
  if (now.getTime() - session.lastSeenAt.getTime() >= LAST_SEEN_GRANULARITY_MS)
    await touchSession(deps.pool, session.idDigest, now);
  return { cookie, session };
}

/**
 * Starts an OIDC sign-in. Writes nothing to the database: the transaction is
 * returned as the new value of the browser's sealed login cookie (see
 * loginCookie.ts), so only this browser can finish it. `reauthenticate`: the
 * user must authenticate again at the identity provider (before an operator
 * action), and its callback must show it did, within the operators' bound.
 */
export async function beginSignIn(
  deps: SignInDeps,
  loginCookie: string | undefined,
  returnTo: string,
  { reauthenticate = false }: { reauthenticate?: boolean } = {},
): Promise<{ redirect: URL; loginCookie: string }> {
  const login = await deps.oidc.beginLogin({
    redirectUri: deps.callbackUrl,
    scope: 'openid profile',
    ...(reauthenticate && { reauthenticate: { maxAgeSeconds: OPERATOR_PROOF_MAX_AGE_SECONDS } }),
  });
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + LOGIN_TTL_MS);
  return {
    redirect: login.url,
    loginCookie: deps.logins.add(
      loginCookie,
      login.state,
      {
        codeVerifier: login.codeVerifier,
        nonce: login.nonce,
        returnTo,
        expiresAt,
        ...(login.maxAgeSeconds !== undefined && { maxAgeSeconds: login.maxAgeSeconds }),
      },
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
    ...(login.maxAgeSeconds !== undefined && { maxAgeSeconds: login.maxAgeSeconds }),
  });
  const newCookie = randomToken();
  const store = async (tx: Queryable) => {
    if (cookies.session) await deleteSession(tx, digestOf(cookies.session));
    await insertSession(
      tx,
      {
        idDigest: digestOf(newCookie),
        subject: { iss: verified.issuer, sub: verified.subject },
        displayName: verified.displayName,
        operator: hasOperatorRole(verified.claims, deps.settings.operators),
        // The age of the authentication on the issuer's clock, counted back from ours (no skew).
        authenticatedAt:
          verified.authAgeSeconds === undefined ? undefined : new Date(now.getTime() - verified.authAgeSeconds * 1000),
        expiresAt: new Date(now.getTime() + deps.settings.session.ttlSeconds * 1000),
      },
      now,
    );
  };
  // The previous session ends with the new one's start; a first sign-in is one INSERT and needs no transaction.
  await (cookies.session ? withTransaction(deps.pool, store) : store(deps.pool));
  return { newCookie, returnTo: login.returnTo, loginCookie: rest };
}

export async function signOut(deps: Pick<SignInDeps, 'pool'>, cookie: string | undefined): Promise<void> {
  if (cookie) await deleteSession(deps.pool, digestOf(cookie));
}
