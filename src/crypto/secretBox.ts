import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Keyring } from './keyring.js';

export interface Sealed {
  /** iv (12) | tag (16) | ciphertext */
  ciphertext: Buffer;
  keyId: string;
}

export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

/**
 * The value was sealed under a key id SECRET_KEYS no longer holds (retired too early, or a
 * deployment that lost it): it can never be opened here. Callers turn this into "connect again" or
 * "start again", never an internal error; a tampered value stays a plain SecretBoxError.
 */
export class MissingKeyError extends SecretBoxError {
  override name = 'MissingKeyError';
  constructor(readonly keyId: string) {
    super(`no key ${keyId} to open this secret`);
  }
}

/**
 * AES-256-GCM for values at rest (tokens, PKCE verifiers). The additional
 * authenticated data binds a ciphertext to its row's identity (subject,
 * provider, kind, key id), so a ciphertext copied into another row does not
 * decrypt. Keys come from a purpose-bound keyring; rotation is by key id.
 */
export interface SecretBox {
  seal(plaintext: string, aad: string): Sealed;
  open(sealed: Sealed, aad: string): string;
  /** The configured key ids, in SECRET_KEYS's order. */
  keyIds(): readonly string[];
  /** A key id not configured here that another live instance holds: its values are in a rotation, not lost. */
  heldByLive(kid: string): boolean;
}

export function createSecretBox(keyring: Keyring): SecretBox {
  return {
    seal(plaintext, aad) {
      const { kid, key } = keyring.active();
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(`${kid}\n${aad}`, 'utf8'));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return { ciphertext: Buffer.concat([iv, cipher.getAuthTag(), body]), keyId: kid };
    },
    open(sealed, aad) {
      const key = keyring.byKid(sealed.keyId);
      if (!key) throw new MissingKeyError(sealed.keyId);
      if (sealed.ciphertext.length < 28) throw new SecretBoxError('ciphertext too short');
      const decipher = createDecipheriv('aes-256-gcm', key.key, sealed.ciphertext.subarray(0, 12));
      decipher.setAAD(Buffer.from(`${sealed.keyId}\n${aad}`, 'utf8'));
      decipher.setAuthTag(sealed.ciphertext.subarray(12, 28));
      try {
        return Buffer.concat([decipher.update(sealed.ciphertext.subarray(28)), decipher.final()]).toString('utf8');
      } catch (cause) {
        throw new SecretBoxError('secret failed authentication (wrong key, row or tampered)', { cause });
      }
    },
    keyIds: () => keyring.kids(),
    heldByLive: (kid) => keyring.heldByLive(kid),
  };
}
