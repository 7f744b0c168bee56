import type { CatalogEntryInput } from './catalogEntry.js';

// Slack, user token (acting as the user, not as a bot).
// - `https://slack.com/oauth/v2/authorize`, code exchanged at `oauth.v2.access`;
//   user scopes go in `user_scope`, comma-separated; the user token, its
//   scopes and the user's id arrive under `authed_user`:
//   https://docs.slack.dev/authentication/installing-with-oauth
// - The method reference asks for HTTP Basic client authentication rather
//   than parameters, and takes `code_verifier` (PKCE):
//   https://docs.slack.dev/reference/methods/oauth.v2.access
// - `ok: false` inside HTTP 200 and `token_type: "bot"` at the top level are
//   handled by the `slack` conformer. Revocation is `auth.revoke` with the
//   token as bearer, not RFC 7009.
// - Web API methods answer HTTP 200 with `ok: false` and an `error`; a dead
//   token is `not_authed`, `invalid_auth`, `account_inactive`,
//   `token_revoked` or `token_expired` (the common errors of every method,
//   e.g. https://docs.slack.dev/reference/methods/auth.test).
export const slack: CatalogEntryInput = {
  id: 'slack',
  displayName: 'Slack',
  kind: 'oauth2',
  docs: 'https://docs.slack.dev/authentication/installing-with-oauth',
  authorizationEndpoint: 'https://slack.com/oauth/v2/authorize',
  tokenEndpoint: 'https://slack.com/api/oauth.v2.access',
  identity: { from: 'tokenResponse', subjectPath: 'authed_user.id' },
  clientAuth: 'client_secret_basic',
  pkce: true,
  scopeParam: 'user_scope',
  scopeSeparator: ',',
  conformer: 'slack',
  apiBase: 'https://slack.com/api',
  deadTokenAnswer: {
    errorPath: 'error',
    values: ['not_authed', 'invalid_auth', 'account_inactive', 'token_revoked', 'token_expired'],
  },
};
