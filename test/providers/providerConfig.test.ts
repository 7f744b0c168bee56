import { describe, expect, it } from 'vitest';
import { parseProviders, ProviderConfigError } from '../../src/providers/providerConfig.js';
import { badProvidersFile } from '../support/providerEntries.js';
import { TEST_SELF } from '../support/brokerSelf.js';

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
    parseProviders(entries, { allowLoopback: false, self: TEST_SELF });
  } catch (err) {
    expect(err).toBeInstanceOf(ProviderConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ProviderConfigError');
}

describe('parseProviders', () => {
  it('accepts a well-formed entry and keeps its secret out of print', () => {
    const [provider] = parseProviders([good], { allowLoopback: false, self: TEST_SELF });
    expect(provider?.id).toBe('reports');
    expect(JSON.stringify(provider)).not.toContain('client-secret-canary');
  });

  it('lists every URL-policy problem of every entry in one error', () => {
    const message = problems([
      { ...good, issuer: 'http://reports.example.com', apiBase: 'https://user:pw@reports.example.com/api' },
      { ...good, id: 'other', audience: 'https://xn--rports-9we.example.com/api' },
    ]);
    expect(message).toContain('[0] (reports) issuer: reports.issuer must use https');
    expect(message).toContain('[0] (reports) apiBase: reports.apiBase carries user information');
    expect(message).toContain('[1] (other) audience: other.audience has a host label that mixes scripts');
  });

  it('refuses loopback providers outside development, and accepts them in development', () => {
    const local = {
      ...good,
      issuer: 'https://127.0.0.1:8445',
      apiBase: 'https://127.0.0.1:8445/api',
      audience: 'https://127.0.0.1:8445/api',
    };
    expect(problems([local])).toContain('loopback');
    expect(parseProviders([local], { allowLoopback: true, self: TEST_SELF })[0]?.issuer).toBe('https://127.0.0.1:8445');
  });

  it('refuses duplicate ids, unknown fields and missing ones', () => {
    expect(problems([good, good])).toContain('reports is listed twice');
    expect(problems([{ ...good, tokenEndpoint: 'https://x' }])).toMatch(/tokenEndpoint|Unrecognized/);
    const { clientSecret: _omitted, ...withoutSecret } = good;
    expect(problems([withoutSecret])).toContain('clientSecret');
  });
});

describe('PROVIDERS_FILE entries: catalog ids, custom entries, secrets from the environment', () => {
  const readEnv = (name: string) => ({ GITHUB_CLIENT_SECRET: 'github-secret-canary' })[name];

  it("builds a catalog entry from its id and the deployment's parameters, the secret read from the environment", () => {
    const [github] = parseProviders(
      [
        {
          id: 'github',
          catalog: 'github',
          clientId: 'Iv1.abc',
          clientSecret: { env: 'GITHUB_CLIENT_SECRET' },
          scopes: ['repo'],
          params: { host: 'github.example.com' },
        },
      ],
      { allowLoopback: false, self: TEST_SELF, readEnv },
    );
    expect(github).toMatchObject({
      id: 'github',
      kind: 'oauth2',
      catalog: 'github',
      issuer: undefined,
      authorizationEndpoint: 'https://github.example.com/login/oauth/authorize',
      tokenEndpoint: 'https://github.example.com/login/oauth/access_token',
      apiBase: 'https://github.example.com/api/v3',
      clientAuth: 'client_secret_post',
      pkce: true,
      conformer: 'github',
      scopes: ['repo'],
      audience: undefined,
      resource: undefined,
    });
    expect(github?.clientSecret.reveal()).toBe('github-secret-canary');
    expect(JSON.stringify(github)).not.toContain('github-secret-canary');
  });

  it("fills the deployment's client id into GitHub's revocation call, as one path segment", () => {
    const [github] = parseProviders(
      [
        {
          id: 'github',
          catalog: 'github',
          clientId: 'Iv1.a/b?c',
          clientSecret: 's',
          params: { host: 'github.example.com' },
        },
      ],
      { allowLoopback: false, self: TEST_SELF },
    );
    expect(github?.revocationCall).toEqual({
      method: 'DELETE',
      url: 'https://github.example.com/api/v3/applications/Iv1.a%2Fb%3Fc/token',
      tokenMember: 'access_token',
    });
    expect(github?.revocationEndpoint).toBeUndefined();
  });

  it("takes the catalog's defaults where the deployment gives none", () => {
    const [entra] = parseProviders([{ id: 'work', catalog: 'microsoft', clientId: 'app', clientSecret: 's' }], {
      allowLoopback: false,
      self: TEST_SELF,
    });
    expect(entra?.authorizationEndpoint).toBe('https://login.microsoftonline.com/common/oauth2/v2.0/authorize');
    expect(entra?.resource).toBeUndefined();
    expect(entra?.scopes.length).toBeGreaterThan(0);
  });

  it('accepts a complete custom entry', () => {
    const [custom] = parseProviders(
      [
        {
          id: 'acme',
          kind: 'oauth2',
          displayName: 'Acme',
          docs: 'https://acme.example.com/docs/oauth',
          authorizationEndpoint: 'https://login.acme.example.com/authorize',
          tokenEndpoint: 'https://api.acme.example.com/oauth/token',
          identity: { from: 'call', method: 'GET', url: 'https://api.acme.example.com/me', subjectPath: 'id' },
          clientAuth: 'client_secret_basic',
          pkce: false,
          apiBase: 'https://api.acme.example.com',
          clientId: 'acme-client',
          clientSecret: { env: 'ACME_SECRET' },
        },
      ],
      { allowLoopback: false, self: TEST_SELF, readEnv: (name) => (name === 'ACME_SECRET' ? 'x' : undefined) },
    );
    expect(custom).toMatchObject({
      id: 'acme',
      kind: 'oauth2',
      catalog: undefined,
      clientAuth: 'client_secret_basic',
      pkce: false,
      tokenEndpoint: 'https://api.acme.example.com/oauth/token',
    });
  });

  it('refuses RFC 8414 metadata discovery without an issuer to discover from', () => {
    const entry = {
      id: 'acme',
      kind: 'oauth2',
      displayName: 'Acme',
      docs: 'https://acme.example.com/docs/oauth',
      metadataDiscovery: true,
      authorizationEndpoint: 'https://login.acme.example.com/authorize',
      tokenEndpoint: 'https://api.acme.example.com/oauth/token',
      identity: { from: 'call', method: 'GET', url: 'https://api.acme.example.com/me', subjectPath: 'id' },
      clientAuth: 'client_secret_basic',
      pkce: true,
      apiBase: 'https://api.acme.example.com',
      clientId: 'acme-client',
      clientSecret: 's',
    };
    expect(problems([entry])).toContain('[0] (acme) metadataDiscovery: needs an oauth2 entry with an issuer');
  });

  it('lists every problem of the file at once: unknown catalog id, missing template parameter, a host the URL policy refuses, a secret missing from the environment', () => {
    const message = problems(badProvidersFile);
    expect(message.split('\n').slice(1)).toEqual([
      expect.stringMatching(/^ {2}- \[0\] \(gh\) catalog: "gitbub" is not in the catalog \(it has: github, .*\)$/),
      '  - [1] (tenanted) params.tenant: is required (the tenant)',
      expect.stringMatching(/^ {2}- \[2\] \(ghes\) authorizationEndpoint: .*looks like github\.com/),
      expect.stringMatching(/^ {2}- \[2\] \(ghes\) tokenEndpoint: .*looks like github\.com/),
      expect.stringMatching(/^ {2}- \[2\] \(ghes\) revocationCall\.url: .*looks like github\.com/),
      expect.stringMatching(/^ {2}- \[2\] \(ghes\) identity\.url: .*looks like github\.com/),
      expect.stringMatching(/^ {2}- \[2\] \(ghes\) apiBase: .*looks like github\.com/),
      '  - [3] (github) clientSecret: the environment variable GITHUB_CLIENT_SECRET is not set',
    ]);
  });
});
