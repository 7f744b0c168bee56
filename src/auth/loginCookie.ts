import { parse, serialize } from 'cookie';
import type { Request, Response } from 'express';
import { SecretBoxError, type SecretBox } from '../crypto/secretBox.js';
import { digestOf } from '../shared/tokens.js';

// The sign-in transaction (PKCE verifier, nonce, return_to) waits in the browser, not in the database:
// nothing is written before the user comes back from the identity provider, so an unauthenticated
// GET /login costs no rows. The cookie is AES-256-GCM sealed, its AAD bound to the digest of `state`
// and to the expiry, so only the callback carrying that state opens it, and a copied or altered
// entry does not.
export const LOGIN_COOKIE = '__Host-broker_login';
const MAX_ENTRIES = 3; // sign-ins running in other tabs of the same browser
const MAX_COOKIE_BYTES = 3800; // browsers keep cookies up to 4096 bytes, name and attributes included

export interface LoginTransaction {
  codeVerifier: string;
  nonce: string;
  returnTo: string;
  expiresAt: Date;
  /** The `max_age` the authorization request sent (a sign-in again before an operator action). */
  maxAgeSeconds?: number;
}

export interface LoginCookies {
  /** The cookie value with this sign-in added (the oldest dropped past the limits). */
  add(current: string | undefined, state: string, login: LoginTransaction, now: Date): string;
  /** The sign-in for this state, if this browser started it and it is unexpired, and the cookie without it. */
  take(
    current: string | undefined,
    state: string,
    now: Date,
  ): { login: LoginTransaction | undefined; rest: string | undefined };
}

const aad = (state: string, expiresAt: number) => `browser-login\n${digestOf(state).toString('hex')}\n${expiresAt}`;

// One entry: `<expiry seconds>.<key id>.<base64url ciphertext>`; entries joined by `~`.
function entriesOf(current: string | undefined, now: Date): { exp: number; kid: string; body: string; raw: string }[] {
  return (current ?? '')
    .split('~')
    .map((raw) => {
      const [exp = '', kid = '', body = ''] = raw.split('.');
      return { exp: Number(exp), kid, body, raw };
    })
    .filter((e) => Number.isSafeInteger(e.exp) && e.exp * 1000 > now.getTime() && e.kid && e.body)
    .slice(-MAX_ENTRIES);
}

export function createLoginCookies(box: SecretBox): LoginCookies {
  return {
    add(current, state, login, now) {
      const exp = Math.floor(login.expiresAt.getTime() / 1000);
      const sealed = box.seal(
        JSON.stringify({ v: login.codeVerifier, n: login.nonce, r: login.returnTo, m: login.maxAgeSeconds }),
        aad(state, exp),
      );
      const entries = [
        ...entriesOf(current, now).map((e) => e.raw),
        `${exp}.${sealed.keyId}.${sealed.ciphertext.toString('base64url')}`,
      ].slice(-MAX_ENTRIES);
      while (entries.length > 1 && entries.join('~').length > MAX_COOKIE_BYTES) entries.shift();
      return entries.join('~');
    },
    take(current, state, now) {
      const entries = entriesOf(current, now);
      for (const [i, entry] of entries.entries()) {
        let plain: string;
        try {
          plain = box.open(
            { keyId: entry.kid, ciphertext: Buffer.from(entry.body, 'base64url') },
            aad(state, entry.exp),
          );
        } catch (err) {
          if (err instanceof SecretBoxError) continue; // another tab's sign-in, or not ours at all
          throw err;
        }
        const { v, n, r, m } = JSON.parse(plain) as { v: string; n: string; r: string; m?: number };
        const rest = entries
          .filter((_, j) => j !== i)
          .map((e) => e.raw)
          .join('~');
        return {
          login: {
            codeVerifier: v,
            nonce: n,
            returnTo: r,
            expiresAt: new Date(entry.exp * 1000),
            ...(m !== undefined && { maxAgeSeconds: m }),
          },
          rest: rest || undefined,
        };
      }
      return { login: undefined, rest: entries.map((e) => e.raw).join('~') || undefined };
    },
  };
}

export function readLoginCookie(req: Request): string | undefined {
  const value = req.headers.cookie ? parse(req.headers.cookie)[LOGIN_COOKIE] : undefined;
  return value && value.length <= 4096 && /^[A-Za-z0-9_~.-]+$/.test(value) ? value : undefined;
}

/** Writes the cookie, or clears it when nothing is left. */
export function writeLoginCookie(res: Response, value: string | undefined, maxAgeSeconds: number): void {
  res.append(
    'Set-Cookie',
    serialize(LOGIN_COOKIE, value ?? '', {
      httpOnly: true,
      secure: true,
      sameSite: 'lax',
      path: '/',
      maxAge: value ? maxAgeSeconds : 0,
    }),
  );
}
