import { describe, expect, it } from 'vitest';
import { parseProviders, ProviderConfigError } from '../../src/providers/providerConfig.js';
import { canonicalResource } from '../../src/shared/resource.js';
import { TEST_SELF } from '../support/brokerSelf.js';

// PROVIDERS_FILE entries of kind `mcp`, validated at start beside every other provider.

const linear = { id: 'linear', kind: 'mcp', url: 'https://mcp.linear.app/mcp', prefix: 'linear', registration: 'auto' };

const problemsOf = (entries: unknown[], readEnv?: (name: string) => string | undefined) => {
  try {
    parseProviders(entries, { allowLoopback: false, self: TEST_SELF, ...(readEnv && { readEnv }) });
  } catch (err) {
    if (err instanceof ProviderConfigError)
      return err.message
        .split('\n')
        .slice(1)
        .map((l) => l.trim());
    throw err;
  }
  return [];
};

describe('upstream entries in PROVIDERS_FILE', () => {
  it('makes an auto entry a public OAuth 2.0 provider whose endpoints and client are still to be learnt', () => {
    const [provider] = parseProviders([linear], { allowLoopback: false, self: TEST_SELF });
    expect(provider).toMatchObject({
      id: 'linear',
      displayName: 'linear',
      kind: 'oauth2',
      issuer: undefined,
      authorizationEndpoint: undefined,
      clientId: '',
      clientAuth: 'none',
      pkce: true,
      scopes: [],
      resource: 'https://mcp.linear.app/mcp',
      apiBase: 'https://mcp.linear.app/mcp',
      identity: { from: 'none' },
      upstream: { url: 'https://mcp.linear.app/mcp', prefix: 'linear', registration: 'auto', scopes: undefined },
    });
  });

  it("takes a static entry's client, its secret from the environment, and its scopes", () => {
    const [provider] = parseProviders(
      [
        {
          id: 'github-mcp',
          kind: 'mcp',
          url: 'https://API.githubcopilot.com/',
          prefix: 'github',
          registration: 'static',
          clientId: 'Iv1.abc',
          clientSecret: { env: 'GITHUB_MCP_SECRET' },
          scopes: ['repo'],
          displayName: 'GitHub',
          issuer: 'https://github.com/login/oauth',
        },
      ],
      {
        allowLoopback: false,
        self: TEST_SELF,
        readEnv: (name) => (name === 'GITHUB_MCP_SECRET' ? 'secret-canary' : undefined),
      },
    );
    expect(provider).toMatchObject({
      clientId: 'Iv1.abc',
      clientAuth: 'client_secret_basic',
      scopes: ['repo'],
      displayName: 'GitHub',
      // Canonical: lower-case host, no trailing slash on an empty path.
      resource: 'https://api.githubcopilot.com',
    });
    expect(provider!.clientSecret.reveal()).toBe('secret-canary');
    expect(provider!.upstream?.issuer).toBe('https://github.com/login/oauth');
  });

  it('refuses registration: static without the issuer its client belongs to, and an issuer the URL policy refuses', () => {
    const fixed = { ...linear, registration: 'static', clientId: 'x', clientSecret: 'y' };
    expect(
      problemsOf(
        [
          { ...fixed, id: 'a', prefix: 'a' },
          { ...fixed, id: 'b', prefix: 'b', issuer: 'http://auth.example.com' },
        ],
        () => undefined,
      ),
    ).toEqual([
      '- [0] (a) issuer: is required with registration: static (the authorization server the client is registered at)',
      '- [1] (b) issuer: b.issuer must use https: http://auth.example.com',
    ]);
  });

  it('lists every problem of every entry at once', () => {
    expect(
      problemsOf(
        [
          { ...linear, id: 'a', url: 'http://mcp.example.com/mcp', prefix: 'a' },
          { ...linear, id: 'b', prefix: 'has_underscore' },
          { ...linear, id: 'c', prefix: 'c', registration: 'static' },
          { ...linear, id: 'd', prefix: 'd', clientId: 'x', clientSecret: 'y' },
          { ...linear, id: 'e', prefix: 'linear' },
          {
            ...linear,
            id: 'f',
            prefix: 'f',
            registration: 'static',
            clientId: 'x',
            clientSecret: { env: 'UNSET' },
            issuer: 'https://auth.example.com',
          },
          { ...linear, id: 'g', prefix: 'g', extra: true },
          linear,
        ],
        () => undefined,
      ),
    ).toEqual([
      '- [0] (a) url: a.url must use https: http://mcp.example.com/mcp',
      '- [1] (b) prefix: must be lower-case letters, digits and single hyphens, starting with a letter',
      '- [2] (c) clientId: is required with registration: static',
      '- [2] (c) issuer: is required with registration: static (the authorization server the client is registered at)',
      '- [3] (d) clientId: is for registration: static (auto registers the broker itself)',
      '- [3] (d) clientSecret: is for registration: static (auto registers the broker itself)',
      '- [5] (f) clientSecret: the environment variable UNSET is not set',
      '- [6] (g) (entry): Unrecognized key: "extra"',
      "- [7] (linear) prefix: linear is another upstream's",
    ]);
  });

  it('canonicalises resource identifiers and refuses fragments', () => {
    expect(canonicalResource('HTTPS://MCP.Example.com:443/')).toBe('https://mcp.example.com');
    expect(canonicalResource('https://mcp.example.com/mcp/')).toBe('https://mcp.example.com/mcp/');
    expect(canonicalResource('https://mcp.example.com/mcp#x')).toBeUndefined();
    expect(canonicalResource('mcp.example.com')).toBeUndefined();
  });
  it("refuses an upstream on the broker's own origin or authorized by the broker's own identity provider", () => {
    // TEST_SELF: PUBLIC_URL https://broker.self.example, OIDC_ISSUER https://idp.self.example.
    const own = { ...linear, id: 'own', prefix: 'own', url: 'https://broker.self.example/mcp' };
    const ownOther = { ...linear, id: 'other', prefix: 'other', url: 'https://BROKER.self.example:443/tools/mcp' };
    const byIdp = {
      ...linear,
      id: 'byidp',
      prefix: 'byidp',
      registration: 'static',
      clientId: 'broker',
      issuer: 'https://idp.self.example/',
    };
    const byBroker = { ...linear, id: 'bybroker', prefix: 'bybroker', issuer: 'https://broker.self.example/oauth' };
    const problems = problemsOf([own, ownOther, byIdp, byBroker]);
    expect(problems).toEqual([
      expect.stringMatching(/^- \[0\] \(own\) url: https:\/\/broker\.self\.example\/mcp is the broker's own address/),
      expect.stringMatching(
        /^- \[1\] \(other\) url: https:\/\/broker\.self\.example\/tools\/mcp is the broker's own address/,
      ),
      expect.stringMatching(
        /^- \[2\] \(byidp\) issuer: https:\/\/idp\.self\.example\/ is the broker's own identity provider/,
      ),
      expect.stringMatching(
        /^- \[3\] \(bybroker\) issuer: the authorization server https:\/\/broker\.self\.example\/oauth is the broker's own address/,
      ),
    ]);
    // Another origin, and the identity provider's host on another path, are other servers.
    expect(
      problemsOf([
        { ...linear, url: 'https://broker.self.example:8443/mcp' },
        { ...linear, id: 'idp-path', prefix: 'idppath', issuer: 'https://idp.self.example/tenant' },
      ]),
    ).toEqual([]);
  });

  it('judges own addresses under a PUBLIC_URL with a path by that path', () => {
    const self = { publicUrl: new URL('https://apps.example/broker'), issuer: undefined };
    const entry = (id: string, url: string) => ({ ...linear, id, prefix: id, url });
    expect(() =>
      parseProviders([entry('sibling', 'https://apps.example/notes/mcp')], { allowLoopback: false, self }),
    ).not.toThrow();
    expect(() =>
      parseProviders([entry('inside', 'https://apps.example/broker/mcp')], { allowLoopback: false, self }),
    ).toThrow(/inside\) url: https:\/\/apps\.example\/broker\/mcp is the broker's own address/);
  });
});
