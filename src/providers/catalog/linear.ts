import type { CatalogEntryInput } from './catalogEntry.js';

// Linear.
// - `https://linear.app/oauth/authorize` (scopes comma-separated, `read`
//   always present; PKCE supported); code exchanged at
//   `POST https://api.linear.app/oauth/token`, form-encoded with client_id and
//   client_secret; refresh tokens for every app since 2026-04-01:
//   https://linear.app/developers/oauth-2-0-authentication
// - The API is GraphQL at https://api.linear.app/graphql; the user is
//   `{ viewer { id } }` (from the research notes, not re-checked).
export const linear: CatalogEntryInput = {
  id: 'linear',
  displayName: 'Linear',
  kind: 'oauth2',
  docs: 'https://linear.app/developers/oauth-2-0-authentication',
  authorizationEndpoint: 'https://linear.app/oauth/authorize',
  tokenEndpoint: 'https://api.linear.app/oauth/token',
  identity: {
    from: 'call',
    method: 'POST',
    url: 'https://api.linear.app/graphql',
    body: { query: '{ viewer { id email } }' },
    subjectPath: 'data.viewer.id',
    namePath: 'data.viewer.email',
  },
  clientAuth: 'client_secret_post',
  pkce: true,
  scopeSeparator: ',',
  defaultScopes: ['read'],
  apiBase: 'https://api.linear.app',
};
