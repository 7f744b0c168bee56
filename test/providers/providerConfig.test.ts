import { describe, expect, it } from 'vitest';
import { parseProviders, ProviderConfigError } from '../../src/providers/providerConfig.js';

const good = {
  id: 'reports',
  displayName: 'Report Service',
  issuer: 'https://reports.example.com',
  clientId: 'connect-broker',
  clientSecret: 'client-secret-canary',
  scopes: ['openid', 'reports:write'],
  apiBase: 'https://reports.example.com/api',
  audience: 'https://reports.example.com/api',
};

function problems(entries: unknown): string {
  try {
    parseProviders(entries, { allowLoopback: false });
  } catch (err) {
    expect(err).toBeInstanceOf(ProviderConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ProviderConfigError');
}

describe('parseProviders', () => {
  it('accepts a well-formed entry and keeps its secret out of print', () => {
    const [provider] = parseProviders([good], { allowLoopback: false });
    expect(provider?.id).toBe('reports');
    expect(JSON.stringify(provider)).not.toContain('client-secret-canary');
  });

  it('lists every URL-policy problem of every entry in one error', () => {
    const message = problems([
      { ...good, issuer: 'http://reports.example.com', apiBase: 'https://user:pw@reports.example.com/api' },
      { ...good, id: 'other', audience: 'https://xn--rports-9we.example.com/api' },
    ]);
    expect(message).toContain('[0].issuer: reports.issuer must use https');
    expect(message).toContain('[0].apiBase: reports.apiBase carries user information');
    expect(message).toContain('[1].audience: other.audience has a punycode (IDN) host');
  });

  it('refuses loopback providers outside development, and accepts them in development', () => {
    const local = { ...good, issuer: 'https://127.0.0.1:8445', apiBase: 'https://127.0.0.1:8445/api', audience: 'https://127.0.0.1:8445/api' };
    expect(problems([local])).toContain('loopback');
    expect(parseProviders([local], { allowLoopback: true })[0]?.issuer).toBe('https://127.0.0.1:8445');
  });

  it('refuses duplicate ids, unknown fields and missing ones', () => {
    expect(problems([good, good])).toContain('reports is listed twice');
    expect(problems([{ ...good, tokenEndpoint: 'https://x' }])).toMatch(/tokenEndpoint|Unrecognized/);
    const { clientSecret: _omitted, ...withoutSecret } = good;
    expect(problems([withoutSecret])).toContain('clientSecret');
  });
});
