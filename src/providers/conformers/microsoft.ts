import type { Conformer } from './conformer.js';
import { conformWith } from './standard.js';

// The Microsoft identity platform's v2.0 token endpoint adds an `id_token`
// whenever `openid` was among the scopes ("Only provided if openid scope was
// requested", learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-auth-code-flow),
// issued by the user's own tenant, `https://login.microsoftonline.com/{tid}/v2.0`
// (…/identity-platform/id-tokens). The catalog entry is plain OAuth 2.0 with no
// issuer (its tenant is templated, and `common` has no one issuer), so
// openid-client, which checks any ID token it is given, would refuse the
// answer; the entry learns the account from Graph /me instead, and the ID
// token is dropped here. Entra's other members (`ext_expires_in`, and
// `error_codes`, `trace_id`… beside an RFC 6749 §5.2 error) need nothing.
export const microsoft: Conformer = (raw, keep) => {
  const conformed = conformWith(raw, {}, keep);
  if (conformed.status !== 200) return conformed;
  const { id_token: _unchecked, ...body } = conformed.body;
  return { ...conformed, body };
};
