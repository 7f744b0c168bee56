import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createLoginCookies } from '../../src/auth/loginCookie.js';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { Secret } from '../../src/shared/secret.js';

const keys = [{ kid: 'k1', key: new Secret(randomBytes(32).toString('base64url')) }];
const cookies = createLoginCookies(createSecretBox(createKeyring(keys, 'browser-login')));
const now = new Date('2030-01-01T00:00:00Z');
const inTen = new Date(now.getTime() + 600_000);
const login = (returnTo = '/') => ({
  codeVerifier: 'verifier-canary-9d2f0b7c3e1a4f6b8d0c2e4a6b8d0f1a3c5e7',
  nonce: 'nonce-canary',
  returnTo,
  expiresAt: inTen,
});

describe('login cookie', () => {
  it('keeps no plaintext PKCE verifier, nonce or return target', () => {
    const value = cookies.add(undefined, 'state-1', login('/connect/abc'), now);
    const bytes = Buffer.concat(value.split(/[.~]/).map((part) => Buffer.from(part, 'base64url'))).toString('latin1');
    for (const clear of ['verifier-canary', 'nonce-canary', '/connect/abc', 'state-1']) {
      expect(value).not.toContain(clear);
      expect(bytes).not.toContain(clear);
    }
  });

  it('opens only with the state it was sealed for, once', () => {
    const value = cookies.add(undefined, 'state-1', login(), now);
    expect(cookies.take(value, 'state-2', now).login).toBeUndefined();
    const taken = cookies.take(value, 'state-1', now);
    expect(taken.login).toMatchObject({ codeVerifier: login().codeVerifier, nonce: 'nonce-canary', returnTo: '/' });
    expect(taken.rest).toBeUndefined();
    expect(cookies.take(taken.rest, 'state-1', now).login).toBeUndefined();
  });

  it('keeps the max_age of a sign-in that must authenticate again, and none otherwise', () => {
    const value = cookies.add(undefined, 'state-1', { ...login(), maxAgeSeconds: 300 }, now);
    expect(cookies.take(value, 'state-1', now).login?.maxAgeSeconds).toBe(300);
    const plain = cookies.add(undefined, 'state-2', login(), now);
    expect(cookies.take(plain, 'state-2', now).login).not.toHaveProperty('maxAgeSeconds');
  });

  it('refuses an entry whose expiry or ciphertext was altered, and one that expired', () => {
    const value = cookies.add(undefined, 'state-1', login(), now);
    const [exp, kid, body] = value.split('.');
    expect(cookies.take(`${Number(exp) + 3600}.${kid}.${body}`, 'state-1', now).login).toBeUndefined();
    const flipped = Buffer.from(body!, 'base64url');
    flipped[flipped.length - 1]! ^= 1;
    expect(cookies.take(`${exp}.${kid}.${flipped.toString('base64url')}`, 'state-1', now).login).toBeUndefined();
    expect(cookies.take(value, 'state-1', new Date(inTen.getTime() + 1000)).login).toBeUndefined();
  });

  it('holds the latest three sign-ins of a browser and stays under the cookie size limit', () => {
    let value: string | undefined;
    for (const state of ['s1', 's2', 's3', 's4']) value = cookies.add(value, state, login(`/${'x'.repeat(1000)}`), now);
    expect(value!.length).toBeLessThan(3800);
    expect(cookies.take(value, 's1', now).login).toBeUndefined();
    expect(cookies.take(value, 's4', now).login).toBeDefined();
    let small: string | undefined;
    for (const state of ['s1', 's2', 's3', 's4']) small = cookies.add(small, state, login(), now);
    expect(['s1', 's2', 's3', 's4'].map((s) => cookies.take(small, s, now).login !== undefined)).toEqual([
      false,
      true,
      true,
      true,
    ]);
  });
});
