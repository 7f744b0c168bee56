import type { CatalogEntryInput } from './catalogEntry.js';

// HubSpot public app.
// - `https://app.hubspot.com/oauth/authorize`, scopes space-separated:
//   https://developers.hubspot.com/docs/apps/legacy-apps/authentication/working-with-oauth
// - Token at `POST https://api.hubapi.com/oauth/v1/token`, form-encoded with
//   client_id and client_secret, `code_verifier` accepted; the answer carries
//   `hub_id` (the account) and `user_id`:
//   https://developers.hubspot.com/docs/api-reference/legacy/authentication/oauth-tokens/v1/refresh-oauth-token
// - The authorization and token endpoints are on different hosts. Refresh
//   tokens are deleted with the token in the URL path, which the broker never
//   does (tokens never appear in a URL), so no revocationEndpoint.
export const hubspot: CatalogEntryInput = {
  id: 'hubspot',
  displayName: 'HubSpot',
  kind: 'oauth2',
  docs: 'https://developers.hubspot.com/docs/apps/legacy-apps/authentication/working-with-oauth',
  authorizationEndpoint: 'https://app.hubspot.com/oauth/authorize',
  tokenEndpoint: 'https://api.hubapi.com/oauth/v1/token',
  identity: { from: 'tokenResponse', subjectPath: 'user_id' },
  clientAuth: 'client_secret_post',
  pkce: true,
  defaultScopes: ['oauth'],
  apiBase: 'https://api.hubapi.com',
};
