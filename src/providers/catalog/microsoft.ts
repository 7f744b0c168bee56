import type { CatalogEntryInput } from './catalogEntry.js';

// Microsoft Entra ID (identity platform v2.0) for Microsoft Graph.
// - `https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize` and
//   `/token`; `tenant` is `common`, `organizations`, `consumers`, a tenant id
//   or a verified domain; PKCE with the auth code flow; `offline_access`
//   for a refresh token:
//   https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-auth-code-flow
// - The signed-in user is `GET https://graph.microsoft.com/v1.0/me` → `id`:
//   https://learn.microsoft.com/en-us/graph/api/user-get
// - Entra refuses the RFC 8707 `resource` parameter beside v2 scopes
//   (AADSTS9010010 as users report it; the error-code reference,
//   https://learn.microsoft.com/en-us/entra/identity-platform/reference-error-codes,
//   lists AADSTS901002 "The 'resource' request parameter isn't supported").
// - With `openid` among the scopes the token answer adds an ID token issued by
//   the user's tenant, which this entry cannot check: the `microsoft`
//   conformer drops it (src/providers/conformers/microsoft.ts).
// - Kept `oauth2`, not `oidc`: the `common` issuer is tenant-templated, so its
//   discovery document cannot be checked against one issuer. Graph tokens are
//   not for the client to verify, so they are treated as opaque.
export const microsoft: CatalogEntryInput = {
  id: 'microsoft',
  displayName: 'Microsoft Entra ID / Graph',
  kind: 'oauth2',
  docs: 'https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-auth-code-flow',
  params: {
    tenant: {
      description: 'common, organizations, consumers, a tenant id or a verified domain',
      pattern: '[A-Za-z0-9][A-Za-z0-9.-]{0,99}',
      default: 'common',
    },
  },
  authorizationEndpoint: 'https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize',
  tokenEndpoint: 'https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token',
  identity: {
    from: 'call',
    method: 'GET',
    url: 'https://graph.microsoft.com/v1.0/me',
    subjectPath: 'id',
    namePath: 'userPrincipalName',
  },
  clientAuth: 'client_secret_post',
  pkce: true,
  conformer: 'microsoft',
  defaultScopes: ['offline_access', 'User.Read'],
  apiBase: 'https://graph.microsoft.com/v1.0',
};
