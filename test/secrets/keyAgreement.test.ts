import { describe, expect, it } from 'vitest';
import { agreedActiveKid } from '../../src/secrets/keyAgreement.js';

describe('agreedActiveKid: the key new values are sealed under while instances roll', () => {
  it('stays on the old key while one live instance lacks the new one', () => {
    expect(agreedActiveKid(['k2', 'k1'], [['k1'], ['k2', 'k1']])).toBe('k1');
  });

  it('moves to the new key once every live instance holds it', () => {
    expect(
      agreedActiveKid(
        ['k2', 'k1'],
        [
          ['k2', 'k1'],
          ['k2', 'k1'],
        ],
      ),
    ).toBe('k2');
  });

  it('an instance already without the old key seals under the new one the others hold too', () => {
    expect(agreedActiveKid(['k2'], [['k2'], ['k2', 'k1']])).toBe('k2');
  });

  it('falls back to its own first key when no key is shared (key sets that share nothing)', () => {
    expect(agreedActiveKid(['k3'], [['k1'], ['k3']])).toBe('k3');
  });
});
