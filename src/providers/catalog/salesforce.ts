import { type CatalogEntryInput, HOST_PATTERN } from './catalogEntry.js';

// Salesforce.
// - `https://hostname/services/oauth2/authorize`, `/token`, `/revoke` and the
//   OpenID Connect `/userinfo`, where hostname is login.salesforce.com,
//   test.salesforce.com for sandboxes, or a My Domain host:
//   https://help.salesforce.com/s/articleView?id=xcloud.remoteaccess_oauth_endpoints.htm&type=5
// - The token response names the org's `instance_url`, the base of its REST
//   API, which differs from the login host:
//   https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/intro_understanding_web_server_oauth_flow.htm
// - The user is userinfo → `user_id`; `refresh_token` (or `offline_access`)
//   scope for a refresh token; the token answer has no `expires_in`
//   (from the research notes, not re-checked).
export const salesforce: CatalogEntryInput = {
  id: 'salesforce',
  displayName: 'Salesforce',
  kind: 'oauth2',
  docs: 'https://help.salesforce.com/s/articleView?id=xcloud.remoteaccess_oauth_endpoints.htm&type=5',
  params: {
    loginHost: {
      description: 'login.salesforce.com, test.salesforce.com, or the My Domain host',
      pattern: HOST_PATTERN,
      default: 'login.salesforce.com',
    },
  },
  authorizationEndpoint: 'https://{loginHost}/services/oauth2/authorize',
  tokenEndpoint: 'https://{loginHost}/services/oauth2/token',
  revocationEndpoint: 'https://{loginHost}/services/oauth2/revoke',
  identity: {
    from: 'call',
    method: 'GET',
    url: 'https://{loginHost}/services/oauth2/userinfo',
    subjectPath: 'user_id',
    namePath: 'preferred_username',
  },
  clientAuth: 'client_secret_post',
  pkce: true,
  defaultScopes: ['api', 'refresh_token'],
  // Replaced per connection by the token response's instance_url.
  apiBase: 'https://{loginHost}',
  connectionApiBase: { tokenResponsePath: 'instance_url', allowedHostSuffixes: ['.salesforce.com'] },
};
