import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A random, URL-safe bearer value with 256 bits of entropy. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 of a bearer value: what we store instead of the value itself. */
export function digestOf(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export function equalInConstantTime(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
