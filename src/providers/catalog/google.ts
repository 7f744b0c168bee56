import type { CatalogEntryInput } from './catalogEntry.js';

// Google (OpenID Connect; Gmail, Drive, Calendar APIs).
// - Issuer, authorization, token and revocation endpoints from the discovery
//   document, https://accounts.google.com/.well-known/openid-configuration:
//   https://developers.google.com/identity/openid-connect/reference
// - A refresh token is issued only with `access_type=offline`, and again after
//   the first consent only with `prompt=consent`:
//   https://developers.google.com/identity/protocols/oauth2/web-server
// - The authorization and token endpoints are on different hosts.
export const google: CatalogEntryInput = {
  id: 'google',
  displayName: 'Google',
  kind: 'oidc',
  docs: 'https://developers.google.com/identity/protocols/oauth2/web-server',
  issuer: 'https://accounts.google.com',
  authorizationEndpoint: 'https://accounts.google.com/o/oauth2/v2/auth',
  tokenEndpoint: 'https://oauth2.googleapis.com/token',
  revocationEndpoint: 'https://oauth2.googleapis.com/revoke',
  identity: { from: 'idToken' },
  clientAuth: 'client_secret_basic',
  pkce: true,
  authorizeParams: { access_type: 'offline', prompt: 'consent' },
  defaultScopes: ['openid'],
  apiBase: 'https://www.googleapis.com',
};
