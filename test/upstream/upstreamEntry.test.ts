import { describe, expect, it } from 'vitest';
import { parseProviders, ProviderConfigError } from '../../src/providers/providerConfig.js';
import { canonicalResource } from '../../src/upstream/resource.js';

// PROVIDERS_FILE entries of kind `mcp`, validated at start beside every other provider.

const linear = { id: 'linear', kind: 'mcp', url: 'https://mcp.linear.app/mcp', prefix: 'linear', registration: 'auto' };

const problemsOf = (entries: unknown[], readEnv?: (name: string) => string | undefined) => {
  try {
    parseProviders(entries, { allowLoopback: false, ...(readEnv && { readEnv }) });
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
    const [provider] = parseProviders([linear], { allowLoopback: false });
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
      { allowLoopback: false, readEnv: (name) => (name === 'GITHUB_MCP_SECRET' ? 'secret-canary' : undefined) },
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
});
