import { type CatalogEntryInput, HOST_PATTERN } from './catalogEntry.js';

// GitLab (gitlab.com, GitLab Self-Managed, GitLab Dedicated through `host`).
// - Authorization code with PKCE at `/oauth/authorize` and `/oauth/token`,
//   RFC 7009 revocation at `/oauth/revoke`, userinfo at `/oauth/userinfo`
//   (Doorkeeper): https://docs.gitlab.com/api/oauth2/
// - GitLab is an OpenID Connect issuer at its own origin
//   (`/.well-known/openid-configuration` on gitlab.com and self-managed), so
//   with the `openid` scope the user is the ID token's `sub`:
//   https://docs.gitlab.com/integration/openid_connect_provider/
// - REST API under `/api/v4`.
export const gitlab: CatalogEntryInput = {
  id: 'gitlab',
  displayName: 'GitLab',
  kind: 'oidc',
  docs: 'https://docs.gitlab.com/api/oauth2/',
  params: {
    host: {
      description: 'gitlab.com, or the host of a self-managed GitLab',
      pattern: HOST_PATTERN,
      default: 'gitlab.com',
    },
  },
  issuer: 'https://{host}',
  authorizationEndpoint: 'https://{host}/oauth/authorize',
  tokenEndpoint: 'https://{host}/oauth/token',
  revocationEndpoint: 'https://{host}/oauth/revoke',
  identity: { from: 'idToken' },
  clientAuth: 'client_secret_post',
  pkce: true,
  defaultScopes: ['openid'],
  apiBase: 'https://{host}/api/v4',
};
