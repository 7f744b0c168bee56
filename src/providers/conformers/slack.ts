import type { Conformer } from './conformer.js';
import { isObject, type JsonObject } from './responseFields.js';
import { conformWith, type FamilyRules } from './standard.js';

// Slack's oauth.v2.access (docs.slack.dev/reference/methods/oauth.v2.access)
// answers HTTP 200 with `ok: false` and an `error` when it refuses; on success
// the bot token is top level with `token_type: "bot"` and the user token sits
// under `authed_user` with `token_type: "user"`. oauth.v2.user.access
// (docs.slack.dev/reference/methods/oauth.v2.user.access) puts the user token
// top level and names its scopes under `authed_user`. Scopes are comma-separated.

// The documented errors of oauth.v2.access that have an RFC 6749 §5.2 meaning.
const RFC_ERROR = new Map([
  ['invalid_code', 'invalid_grant'],
  ['bad_redirect_uri', 'invalid_grant'],
  ['oauth_authorization_url_mismatch', 'invalid_grant'],
  ['invalid_client_id', 'invalid_client'],
  ['bad_client_secret', 'invalid_client'],
  ['invalid_grant_type', 'unsupported_grant_type'],
]);

function slackError(body: JsonObject): { code: unknown; description?: unknown } | undefined {
  return body['ok'] === true ? undefined : { code: body['error'], description: 'Slack refused the request.' };
}

const EXTRAS = [
  'team.id',
  'team.name',
  'enterprise.id',
  'enterprise.name',
  'is_enterprise_install',
  'app_id',
  'authed_user.id',
] as const;

function userToken(body: JsonObject): JsonObject | string {
  const user = body['authed_user'];
  if (isObject(user) && user['access_token'] !== undefined) return user;
  if (body['token_type'] === 'user') {
    return isObject(user) && body['scope'] === undefined ? { ...body, scope: user['scope'] } : body;
  }
  return 'Slack issued no user token: the connection must ask for user scopes (user_scope).';
}

const common: FamilyRules = { errorIn: slackError, errorCodes: RFC_ERROR, scopeSeparator: ',' };

/** A user-token connection: the user's token is kept and the bot token, if any, is dropped. */
export const slack: Conformer = (raw, keep) =>
  conformWith(raw, { ...common, tokenIn: userToken, bearerTypes: ['user'], extras: EXTRAS }, keep);

/** A bot-token connection: the top-level token. */
export const slackBot: Conformer = (raw, keep) =>
  conformWith(
    raw,
    {
      ...common,
      tokenIn: (body) =>
        body['token_type'] === 'bot'
          ? body
          : 'Slack issued no bot token: the connection must ask for bot scopes (scope).',
      bearerTypes: ['bot'],
      extras: [...EXTRAS, 'bot_user_id'],
    },
    keep,
  );
