import type { CatalogEntryInput } from './catalogEntry.js';

// Google (OpenID Connect; Gmail, Drive, Calendar APIs).
// - Issuer, authorization, token and revocation endpoints from the discovery
//   document, https://accounts.google.com/.well-known/openid-configuration:
//   https://developers.google.com/identity/openid-connect/reference
// - A refresh token is issued only with `access_type=offline`, and again after
//   the first consent only with `prompt=consent`:
//   https://developers.google.com/identity/protocols/oauth2/web-server
// - The authorization and token endpoints are on different hosts.
// - Incremental authorization: `include_granted_scopes=true` keeps what the
//   user granted before in the new grant (same page); the token answer names
//   `email` and `profile` by their URLs, and a user may untick scopes on the
//   consent screen (granular consent), so the granted scopes are checked:
//   https://developers.google.com/identity/protocols/oauth2/scopes
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
  authorizeParams: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' },
  defaultScopes: ['openid'],
  // Two names of one scope each: either one, granted, covers the other.
  impliedScopes: {
    email: ['https://www.googleapis.com/auth/userinfo.email'],
    'https://www.googleapis.com/auth/userinfo.email': ['email'],
    profile: ['https://www.googleapis.com/auth/userinfo.profile'],
    'https://www.googleapis.com/auth/userinfo.profile': ['profile'],
  },
  apiBase: 'https://www.googleapis.com',
};
