import { type CatalogEntryInput, HOST_PATTERN } from './catalogEntry.js';

// GitHub OAuth App, and GitHub Enterprise Server through the `host` parameter.
// - Endpoints `http(s)://[hostname]/login/oauth/authorize` and
//   `/login/oauth/access_token`; scopes space-delimited; client_id and
//   client_secret sent as parameters:
//   https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps
// - PKCE (S256 only) accepted since 2025-07-14:
//   https://github.blog/changelog/2025-07-14-pkce-support-for-oauth-and-github-app-authentication
//   (a server that predates it ignores the parameters, RFC 7636 §5).
// - REST API at https://api.github.com on github.com and at
//   `http(s)://HOSTNAME/api/v3` on Enterprise Server:
//   https://docs.github.com/en/enterprise-server@3.10/rest/enterprise-admin
//   API version 2022-11-28 is served by both (the versioned REST docs).
// - OAuth App tokens do not expire and come without a refresh token; the
//   token endpoint answers a bad code with an error body in place of a token
//   (the `github` conformer).
// - Revocation is not RFC 7009 but "Delete an app token",
//   `DELETE /applications/{client_id}/token` on the REST API, HTTP Basic with
//   the client id and secret, the token in a JSON body `{access_token}`,
//   answered 204: https://docs.github.com/en/rest/apps/oauth-applications#delete-an-app-token
// - A parent scope includes its children (`repo` → `public_repo`…), and the
//   token answer names only what was granted, comma-separated:
//   https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/scopes-for-oauth-apps
export const github: CatalogEntryInput = {
  id: 'github',
  displayName: 'GitHub',
  kind: 'oauth2',
  docs: 'https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps',
  params: {
    host: {
      description: 'github.com, or the host of a GitHub Enterprise Server',
      pattern: HOST_PATTERN,
      default: 'github.com',
    },
  },
  derived: {
    // github.com serves its API on its own host; Enterprise Server under /api/v3.
    apiRoot: {
      cases: [{ when: { host: 'github.com' }, value: 'https://api.github.com' }],
      otherwise: 'https://{host}/api/v3',
    },
  },
  authorizationEndpoint: 'https://{host}/login/oauth/authorize',
  tokenEndpoint: 'https://{host}/login/oauth/access_token',
  identity: { from: 'call', method: 'GET', url: '{apiRoot}/user', subjectPath: 'id', namePath: 'login' },
  clientAuth: 'client_secret_post',
  pkce: true,
  conformer: 'github',
  apiBase: '{apiRoot}',
  revocationCall: { method: 'DELETE', url: '{apiRoot}/applications/{clientId}/token', tokenMember: 'access_token' },
  impliedScopes: {
    repo: ['repo:status', 'repo_deployment', 'public_repo', 'repo:invite', 'security_events'],
    'admin:repo_hook': ['write:repo_hook', 'read:repo_hook'],
    'write:repo_hook': ['read:repo_hook'],
    'admin:org': ['write:org', 'read:org', 'manage_runners:org'],
    'write:org': ['read:org'],
    'admin:public_key': ['write:public_key', 'read:public_key'],
    'write:public_key': ['read:public_key'],
    'admin:gpg_key': ['write:gpg_key', 'read:gpg_key'],
    'write:gpg_key': ['read:gpg_key'],
    user: ['read:user', 'user:email', 'user:follow'],
    project: ['read:project'],
    'write:packages': ['read:packages'],
    'write:discussion': ['read:discussion'],
  },
  apiHeaders: { Accept: 'application/vnd.github+json', 'X-GitHub-Api-Version': '2022-11-28' },
};
