import { InvalidInputError } from '../errors/appError.js';
import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import type { OidcClient } from '../oauth/oauthClient.js';
import type { Clock } from '../shared/clock.js';
import { digestOf, randomToken } from '../shared/tokens.js';
import { consumeLoginTransaction, insertLoginTransaction } from './loginTransactionRepo.js';
import { hasOperatorRole, type OperatorPolicy } from './operatorRole.js';
import { deleteSession, findActiveSession, insertSession, type WebSession } from './webSessionRepo.js';

export interface SignInDeps {
  pool: Pool;
  clock: Clock;
  oidc: OidcClient;
  sessionTtlSeconds: number;
  /** The exact redirect URI registered with the issuer. */
  callbackUrl: string;
  operators: OperatorPolicy;
}

const LOGIN_TTL_MS = 10 * 60 * 1000;

export interface CurrentSession {
  cookie: string;
  session: WebSession;
}

/** The browser's session for this cookie, if it is live. */
export async function currentSession(deps: Pick<SignInDeps, 'pool' | 'clock'>, cookie: string | undefined): Promise<CurrentSession | undefined> {
  if (!cookie) return undefined;
  const session = await findActiveSession(deps.pool, digestOf(cookie), deps.clock.now());
  return session ? { cookie, session } : undefined;
}

/**
 * Starts an OIDC sign-in. The login transaction is bound to the browser's
 * session (an anonymous one is created if needed), so only this browser can
 * finish it. Returns the redirect and the cookie to set, if new.
 */
export async function beginSignIn(deps: SignInDeps, cookie: string | undefined, returnTo: string): Promise<{ redirect: URL; newCookie?: string }> {
  const now = deps.clock.now();
  const existing = await currentSession(deps, cookie);
  const login = await deps.oidc.beginLogin({ redirectUri: deps.callbackUrl, scope: 'openid profile' });
  const newCookie = existing ? undefined : randomToken();
  const sessionDigest = existing?.session.idDigest ?? digestOf(newCookie ?? '');
  await withTransaction(deps.pool, async (tx) => {
    if (newCookie) {
      await insertSession(tx, { idDigest: sessionDigest, subject: undefined, displayName: undefined, operator: false, expiresAt: new Date(now.getTime() + LOGIN_TTL_MS * 3) }, now);
    }
    await insertLoginTransaction(
      tx,
      { stateDigest: digestOf(login.state), sessionDigest, codeVerifier: login.codeVerifier, nonce: login.nonce, returnTo, expiresAt: new Date(now.getTime() + LOGIN_TTL_MS) },
      now,
    );
  });
  return newCookie ? { redirect: login.url, newCookie } : { redirect: login.url };
}

/**
 * Finishes a sign-in: consumes the login transaction once (same browser,
 * unexpired), lets openid-client check state, PKCE, nonce, issuer and the ID
 * Token, then replaces the session with a new one bound to the subject (a
 * fresh cookie value, so a planted session id is worthless).
 */
export async function completeSignIn(deps: SignInDeps, cookie: string | undefined, currentUrl: URL): Promise<{ newCookie: string; returnTo: string }> {
  const state = currentUrl.searchParams.get('state');
  if (!cookie || !state) throw new InvalidInputError('This sign-in response does not belong to a sign-in started in this browser. Start again.');
  const now = deps.clock.now();
  const login = await consumeLoginTransaction(deps.pool, digestOf(state), digestOf(cookie), now);
  if (!login) throw new InvalidInputError('This sign-in response was already used, has expired, or was started in another browser. Start again.');
  const verified = await deps.oidc.completeLogin(currentUrl, deps.callbackUrl, { state, nonce: login.nonce, codeVerifier: login.codeVerifier });
  const newCookie = randomToken();
  await withTransaction(deps.pool, async (tx) => {
    await deleteSession(tx, digestOf(cookie));
    await insertSession(
      tx,
      {
        idDigest: digestOf(newCookie),
        subject: { iss: verified.issuer, sub: verified.subject },
        displayName: verified.displayName,
        operator: hasOperatorRole(verified.claims, deps.operators),
        expiresAt: new Date(now.getTime() + deps.sessionTtlSeconds * 1000),
      },
      now,
    );
  });
  return { newCookie, returnTo: login.returnTo };
}

export async function signOut(deps: Pick<SignInDeps, 'pool'>, cookie: string | undefined): Promise<void> {
  if (cookie) await deleteSession(deps.pool, digestOf(cookie));
}
