import type { Request } from 'express';
import type { Principal } from '../auth/principal.js';
import { readSessionCookie } from '../auth/sessionCookie.js';
import { currentSession, type SignInDeps } from '../auth/signIn.js';

/** The user a page is for: who signed in, the name to greet them by, and the cookie their CSRF token is keyed by. */
export interface SignedInUser {
  principal: Principal;
  name: string;
  cookie: string;
}

/** The browser's signed-in user, or undefined without a live session that names a subject. */
export async function signedInUser(
  deps: Pick<SignInDeps, 'pool' | 'clock'>,
  req: Request,
): Promise<SignedInUser | undefined> {
  const current = await currentSession(deps, readSessionCookie(req));
  const subject = current?.session.subject;
  return current && subject
    ? { principal: subject, name: current.session.displayName ?? subject.sub, cookie: current.cookie }
    : undefined;
}
