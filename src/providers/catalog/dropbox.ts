import type { CatalogEntryInput } from './catalogEntry.js';

// Dropbox.
// - `https://www.dropbox.com/oauth2/authorize`; code exchanged at
//   `https://api.dropboxapi.com/oauth2/token` with the app key and secret as
//   HTTP Basic; PKCE supported; `token_access_type=offline` for a refresh
//   token beside the short-lived access token:
//   https://developers.dropbox.com/oauth-guide
//   https://dropbox.tech/developers/using-oauth-2-0-with-offline-access
// - The user is `POST /2/users/get_current_account` (no body) → `account_id`.
// - Authorize and token endpoints are on different hosts. Revocation is
//   `POST /2/auth/token/revoke` with the token as bearer, not RFC 7009.
export const dropbox: CatalogEntryInput = {
  id: 'dropbox',
  displayName: 'Dropbox',
  kind: 'oauth2',
  docs: 'https://developers.dropbox.com/oauth-guide',
  authorizationEndpoint: 'https://www.dropbox.com/oauth2/authorize',
  tokenEndpoint: 'https://api.dropboxapi.com/oauth2/token',
  identity: {
    from: 'call',
    method: 'POST',
    url: 'https://api.dropboxapi.com/2/users/get_current_account',
    subjectPath: 'account_id',
    namePath: 'email',
  },
  clientAuth: 'client_secret_basic',
  pkce: true,
  authorizeParams: { token_access_type: 'offline' },
  defaultScopes: ['account_info.read'],
  apiBase: 'https://api.dropboxapi.com/2',
};
