import { parse, serialize } from 'cookie';
import type { Request, Response } from 'express';

// __Host- pins the cookie to this exact origin: Secure, Path=/, no Domain.
export const SESSION_COOKIE = '__Host-broker_session';

export function readSessionCookie(req: Request): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  const value = parse(header)[SESSION_COOKIE];
  return value && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined;
}

export function writeSessionCookie(res: Response, value: string, maxAgeSeconds: number): void {
  res.append(
    'Set-Cookie',
    serialize(SESSION_COOKIE, value, {
      httpOnly: true,
      secure: true,
      sameSite: 'lax',
      path: '/',
      maxAge: maxAgeSeconds,
    }),
  );
}

export function clearSessionCookie(res: Response): void {
  res.append(
    'Set-Cookie',
    serialize(SESSION_COOKIE, '', { httpOnly: true, secure: true, sameSite: 'lax', path: '/', maxAge: 0 }),
  );
}
