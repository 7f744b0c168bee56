import { describe, expect, it } from 'vitest';
import { formatKeysStatus, keysStatus } from '../../src/cli/keysCommand.js';

describe('broker keys status figures', () => {
  const counts = [
    { kind: 'tokens', keyId: 'k2', count: 4 },
    { kind: 'tokens', keyId: 'k1', count: 2 },
    { kind: 'connectLinks', keyId: 'k2', count: 7 },
    { kind: 'toolArguments', keyId: 'gone', count: 1 },
  ] as const;

  it('counts every kind for every key id, the active first, and lets an older key retire only once nothing uses it', () => {
    const status = keysStatus(['k2', 'k1', 'k0'], counts);
    expect(status.activeKeyId).toBe('k2');
    expect(status.kinds).toEqual([
      { kind: 'tokens', byKey: { k2: 4, k1: 2, k0: 0, gone: 0 } },
      { kind: 'pendingAuthorizations', byKey: { k2: 0, k1: 0, k0: 0, gone: 0 } },
      { kind: 'toolArguments', byKey: { k2: 0, k1: 0, k0: 0, gone: 1 } },
      { kind: 'connectLinks', byKey: { k2: 7, k1: 0, k0: 0, gone: 0 } },
      { kind: 'upstreamRegistrations', byKey: { k2: 0, k1: 0, k0: 0, gone: 0 } },
    ]);
    expect(status.keys).toEqual([
      { keyId: 'k2', state: 'active', values: 11, retirable: false },
      { keyId: 'k1', state: 'configured', values: 2, retirable: false },
      { keyId: 'k0', state: 'configured', values: 0, retirable: true },
      // Named by a stored value only: nothing configured opens it.
      { keyId: 'gone', state: 'missing', values: 1, retirable: false },
    ]);
  });

  it('says in words which key can go, which waits for the re-seal, and what no key opens', () => {
    const text = formatKeysStatus(keysStatus(['k2', 'k1', 'k0'], counts));
    expect(text).toContain('Active key: k2 (the first of SECRET_KEYS).');
    expect(text).toMatch(/^k0 +configured +0 +yes: no stored value uses it$/m);
    expect(text).toMatch(/^k1 +configured +2 +not yet: 2 value\(s\) wait for the re-seal/m);
    expect(text).toMatch(/^gone +missing +1 +not configured: 1 value\(s\) no configured key opens/m);
    expect(text).toMatch(/^connection tokens +4 +2 +0 +0$/m);
    expect(text).toContain('MRTR request states');
  });
});
