import { randomBytes } from 'node:crypto';

/** A registered OAuth App (GitHub: Settings → Developer settings → OAuth Apps). */
export interface GithubOAuthApp {
  clientId: string;
  clientSecret: string;
  name: string;
  /** The app's one "Authorization callback URL"; a redirect_uri must be it or a subdirectory of it. */
  callbackUrl: string;
}

/** An authorization request between /login/oauth/authorize and the user's answer. */
export interface PendingAuthorization {
  uid: string;
  app: GithubOAuthApp;
  redirectUri: string;
  scopes: string[];
  state: string | undefined;
  codeChallenge: string | undefined;
  login: string | undefined;
  expiresAt: number;
}

export interface IssuedCode {
  clientId: string;
  login: string;
  scopes: string[];
  redirectUri: string;
  codeChallenge: string | undefined;
  expiresAt: number;
}

/** What lives only in memory: a restart signs everyone out and voids unused codes, which is harmless. */
export interface GithubAuthState {
  pending: Map<string, PendingAuthorization>;
  sessions: Map<string, string>;
  codes: Map<string, IssuedCode>;
  now: () => number;
}

export function createGithubAuthState(now: () => number = Date.now): GithubAuthState {
  return { pending: new Map(), sessions: new Map(), codes: new Map(), now };
}

/** Adds `value` to `map`, dropping what has expired, so abandoned requests and unused codes do not pile up. */
export function remember<T extends { expiresAt: number }>(
  map: Map<string, T>,
  key: string,
  value: T,
  now: number,
): void {
  for (const [k, v] of map) if (v.expiresAt <= now) map.delete(k);
  map.set(key, value);
}

/** Takes `key` out of `map` if it is there and unexpired: codes and requests are single use. */
export function takeUnexpired<T extends { expiresAt: number }>(
  map: Map<string, T>,
  key: string,
  now: number,
): T | undefined {
  const value = map.get(key);
  map.delete(key);
  return value && value.expiresAt > now ? value : undefined;
}

export function randomId(bytes = 20): string {
  return randomBytes(bytes).toString('hex');
}

/**
 * GitHub's redirect URL rule: same scheme, host and port as the callback URL
 * (any port when the callback is a loopback address) and a path that is the
 * callback's path or below it ("Redirect URLs" in GitHub's "Authorizing OAuth apps").
 */
export function redirectAllowed(callbackUrl: string, requested: string): boolean {
  let target: URL;
  try {
    target = new URL(requested);
  } catch {
    return false;
  }
  const callback = new URL(callbackUrl);
  const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(callback.hostname);
  if (target.protocol !== callback.protocol || target.hostname !== callback.hostname) return false;
  if (!loopback && target.port !== callback.port) return false;
  if (target.username || target.password || target.hash) return false;
  const base = callback.pathname.endsWith('/') ? callback.pathname : `${callback.pathname}/`;
  return target.pathname === callback.pathname || target.pathname.startsWith(base);
}
