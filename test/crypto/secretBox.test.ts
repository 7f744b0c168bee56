import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox, MissingKeyError, SecretBoxError } from '../../src/crypto/secretBox.js';
import { Secret } from '../../src/shared/secret.js';

const key = (kid: string) => ({ kid, key: new Secret(randomBytes(32).toString('base64url')) });
const [k1, k2] = [key('k1'), key('k2')];
const box = (keys = [k1]) => createSecretBox(createKeyring(keys, 'secrets'));
const canary = 'canary-access-token-4b1d';

describe('secretBox', () => {
  it('round-trips and never contains the plaintext', () => {
    const sealed = box().seal(canary, 'alice|reports|access_token');
    expect(sealed.ciphertext.toString('utf8')).not.toContain('canary');
    expect(sealed.ciphertext.toString('base64')).not.toContain(Buffer.from(canary).toString('base64'));
    expect(box().open(sealed, 'alice|reports|access_token')).toBe(canary);
  });

  it('refuses a ciphertext moved to another row (different AAD)', () => {
    const sealed = box().seal(canary, 'alice|reports|access_token');
    expect(() => box().open(sealed, 'mallory|reports|access_token')).toThrow(/failed authentication/);
    expect(() => box().open(sealed, 'alice|reports|refresh_token')).toThrow(/failed authentication/);
  });

  it('refuses a tampered ciphertext or a relabelled key id', () => {
    const sealed = box([k1, k2]).seal(canary, 'aad');
    const flipped = Buffer.from(sealed.ciphertext);
    flipped[flipped.length - 1]! ^= 1;
    expect(() => box([k1, k2]).open({ ...sealed, ciphertext: flipped }, 'aad')).toThrow(/failed authentication/);
    expect(() => box([k1, k2]).open({ ...sealed, keyId: 'k2' }, 'aad')).toThrow(/failed authentication/);
  });

  it('opens old ciphertexts after rotation and seals new ones with the new key', () => {
    const old = box([k1]).seal(canary, 'aad');
    const rotated = box([k2, k1]);
    expect(rotated.open(old, 'aad')).toBe(canary);
    expect(rotated.seal(canary, 'aad').keyId).toBe('k2');
    expect(() => box([k2]).open(old, 'aad')).toThrow(/no key k1/);
  });

  it('names a retired key id in a MissingKeyError, and lists its key ids active first', () => {
    const old = box([k1]).seal(canary, 'aad');
    const retired = (() => {
      try {
        return box([k2]).open(old, 'aad');
      } catch (err) {
        return err;
      }
    })();
    expect(retired).toBeInstanceOf(MissingKeyError);
    expect(retired).toMatchObject({ keyId: 'k1' });
    // A tampered value under a configured key is not a missing key: it stays an error of its own.
    const flipped = Buffer.from(old.ciphertext);
    flipped[20]! ^= 1;
    expect(() => box([k1]).open({ ...old, ciphertext: flipped }, 'aad')).toThrow(SecretBoxError);
    expect(() => box([k1]).open({ ...old, ciphertext: flipped }, 'aad')).not.toThrow(MissingKeyError);
    expect(box([k2, k1]).keyIds()).toEqual(['k2', 'k1']);
  });

  it('refuses a key id named twice: the second key would open what the first sealed', () => {
    expect(() => createKeyring([k1, k2, { ...k2, key: k1.key }], 'secrets')).toThrow(
      /key id k2 is named more than once/,
    );
  });

  it('uses a key of its own purpose, distinct from the requestState key', () => {
    const secrets = createKeyring([k1], 'secrets').active().key;
    const state = createKeyring([k1], 'mrtr-request-state').active().key;
    expect(Buffer.from(secrets).equals(Buffer.from(state))).toBe(false);
  });
});
