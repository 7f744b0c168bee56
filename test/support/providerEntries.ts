/**
 * A PROVIDERS_FILE with one problem of each kind start-up must list together:
 * an unknown catalog id, a template parameter without a value, a host the URL
 * policy refuses (punycode for gíthub.com, a lookalike of github.com), and a client secret named from an environment
 * variable that is not set (GITHUB_CLIENT_SECRET).
 */
export const badProvidersFile: readonly Record<string, unknown>[] = [
  { id: 'gh', catalog: 'gitbub', clientId: 'a', clientSecret: 's' },
  {
    id: 'tenanted',
    kind: 'oauth2',
    displayName: 'Tenanted',
    docs: 'https://tenanted.example.com/docs',
    params: { tenant: { description: 'the tenant', pattern: '[a-z]+' } },
    authorizationEndpoint: 'https://{tenant}.tenanted.example.com/authorize',
    tokenEndpoint: 'https://{tenant}.tenanted.example.com/token',
    identity: { from: 'call', method: 'GET', url: 'https://api.tenanted.example.com/me', subjectPath: 'id' },
    clientAuth: 'client_secret_post',
    pkce: true,
    apiBase: 'https://api.tenanted.example.com',
    clientId: 'b',
    clientSecret: 's',
  },
  { id: 'ghes', catalog: 'github', clientId: 'c', clientSecret: 's', params: { host: 'xn--gthub-zsa.com' } },
  { id: 'github', catalog: 'github', clientId: 'd', clientSecret: { env: 'GITHUB_CLIENT_SECRET' }, scopes: ['repo'] },
];
