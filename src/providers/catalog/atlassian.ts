import type { CatalogEntryInput } from './catalogEntry.js';

// Atlassian Cloud (Jira, Confluence) with OAuth 2.0 (3LO).
// - `https://auth.atlassian.com/authorize` with `audience=api.atlassian.com`
//   and `prompt=consent`; token at `https://auth.atlassian.com/oauth/token`;
//   `offline_access` for a (rotating) refresh token:
//   https://developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps/
// - Calls go through api.atlassian.com, site calls under `ex/jira/{cloudId}/…`;
//   `GET /oauth/token/accessible-resources` lists the sites (in no set order):
//   https://developer.atlassian.com/cloud/oauth/getting-started/making-calls-to-api/
// - The user is `GET https://api.atlassian.com/me` → `account_id` (and
//   `email`), which needs the `read:me` scope (the 3LO page above). The
//   connection keeps the first accessible site's cloud id and URL.
// - The 3LO page documents no PKCE parameters and no revocation endpoint.
export const atlassian: CatalogEntryInput = {
  id: 'atlassian',
  displayName: 'Atlassian (Jira, Confluence)',
  kind: 'oauth2',
  docs: 'https://developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps/',
  authorizationEndpoint: 'https://auth.atlassian.com/authorize',
  tokenEndpoint: 'https://auth.atlassian.com/oauth/token',
  identity: {
    from: 'call',
    method: 'GET',
    url: 'https://api.atlassian.com/me',
    subjectPath: 'account_id',
    namePath: 'email',
  },
  // The cloud id of the site the user granted (the first one): Jira and Confluence APIs live under /ex/<product>/<cloudId>.
  metadataCall: {
    url: 'https://api.atlassian.com/oauth/token/accessible-resources',
    fields: { cloudId: '0.id', siteUrl: '0.url' },
  },
  clientAuth: 'client_secret_post',
  pkce: false,
  authorizeParams: { audience: 'api.atlassian.com', prompt: 'consent' },
  defaultScopes: ['offline_access', 'read:me'],
  apiBase: 'https://api.atlassian.com',
};
