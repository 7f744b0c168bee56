import type { Conformer } from './conformer.js';
import { conformWith } from './standard.js';

// GitHub OAuth Apps (and GitHub App user tokens) at /login/oauth/access_token:
// - the answer is form-encoded unless the request says Accept: application/json
//   ("Authorizing OAuth apps", docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps);
// - a bad code, bad credentials or a redirect mismatch come back as
//   `{error, error_description, error_uri}` where the token was expected
//   ("Troubleshooting OAuth app access token request errors");
// - scopes are listed with commas ("repo,gist");
// - expiring user tokens may carry `expires_in` as a string ("Refreshing user access tokens").

// The documented token-request errors that have an RFC 6749 §5.2 name.
const RFC_ERROR = new Map([
  ['bad_verification_code', 'invalid_grant'],
  ['redirect_uri_mismatch', 'invalid_grant'],
  ['incorrect_client_credentials', 'invalid_client'],
]);

export const github: Conformer = (raw, keep) =>
  conformWith(raw, { formByDefault: true, scopeSeparator: ',', errorCodes: RFC_ERROR }, keep);
