import type { ServerResponse } from 'node:http';
import type { TlsMaterial } from '../../../src/tls/localCa.js';
import {
  answerConsent,
  basicCredentials,
  bearerToken,
  bodyParams,
  canaryValue,
  CLIENT_NAME,
  consentPage,
  errorPage,
  randomId,
  s256,
  serveEmulator,
  sendHtml,
  sendJson,
  type PendingConsent,
  type SeenRequest,
} from './slackNotionShared.js';

// Slack's OAuth v2 and a sliver of its Web API, as its documentation describes them:
// - "Installing with OAuth" (https://docs.slack.dev/authentication/installing-with-oauth):
//   GET https://slack.com/oauth/v2/authorize with `scope` (bot scopes) and/or
//   `user_scope` (user scopes), comma-separated, `redirect_uri`, `state`; a user who
//   declines is sent back with `error=access_denied` and the `state`; the code is
//   temporary (ten minutes) and single-use.
// - oauth.v2.access (https://docs.slack.dev/reference/methods/oauth.v2.access): a POST,
//   form-encoded or JSON, client credentials preferably in HTTP Basic, `code`,
//   `redirect_uri` (must match the one sent, if one was), `code_verifier` (PKCE),
//   `grant_type`. It always answers HTTP 200: `ok: false` and an `error` (invalid_code,
//   bad_redirect_uri, invalid_client_id, bad_client_secret, invalid_grant_type) when it
//   refuses; on success the bot token (`token_type: "bot"`) is top level only when bot
//   scopes were asked, and the user's token sits under `authed_user`
//   (`token_type: "user"`), beside `team`, `enterprise` and `app_id`.
// - The Web API (https://docs.slack.dev/apis/web-api/): `https://slack.com/api/<method>`,
//   the token as a Bearer header; every answer is HTTP 200 with `ok`, a dead token
//   getting `invalid_auth` or `token_revoked`, none `not_authed`, a missing scope
//   `missing_scope` with `needed` and `provided`.
// - search.messages (https://docs.slack.dev/reference/methods/search.messages): user tokens
//   only, scope `search:read`, argument `query`; bot tokens get `not_allowed_token_type`.
// The PKCE verifier's own error is not named on the method page; this emulator answers invalid_code.

const HOST = 'slack.com';
const AUTHORIZE_PATH = '/oauth/v2/authorize';
const CODE_TTL_MS = 10 * 60_000;

export interface SlackUser {
  /** What the user types in the consent page's account field. */
  login: string;
  id: string;
}

export interface SlackMessage {
  text: string;
  channel: { id: string; name: string };
  ts: string;
}

export interface SlackEmulator {
  origin: string;
  clientId: string;
  clientSecret: string;
  team: { id: string; name: string };
  appId: string;
  users: readonly SlackUser[];
  /** Every token request and API call, in order. */
  tokenRequests: SeenRequest[];
  apiCalls: SeenRequest[];
  /** The tokens issued to `login`, newest last. */
  tokensOf(login: string): { user: string; bot: string | undefined }[];
  /** Every token value issued so far (user and bot), for leak checks. */
  issued(): string[];
  /** Revokes every token issued to `login` (as auth.revoke or an uninstall would). */
  revokeTokensOf(login: string): void;
  close(): Promise<void>;
}

interface Pending extends PendingConsent {
  /** The redirect_uri as the authorize request sent it: the token request must repeat it then. */
  sentRedirectUri: string | undefined;
  userScopes: string[];
  botScopes: string[];
  codeChallenge: string | undefined;
}

interface Code extends Pending {
  user: SlackUser;
  expiresAt: number;
}

interface Token {
  user: SlackUser;
  type: 'user' | 'bot';
  scopes: string[];
  revoked: boolean;
}

const scopesOf = (value: string | null): string[] =>
  (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

export async function startSlackEmulator(options: {
  tls: TlsMaterial;
  redirectUri: string;
  now?: () => number;
}): Promise<SlackEmulator> {
  const now = options.now ?? Date.now;
  const clientId = '2141029472.691202649728';
  const clientSecret = canaryValue('slack-client-secret-');
  const team = { id: 'T0EMUTEAM1', name: 'Emulated Team' };
  const appId = 'A0EMUAPP01';
  const users: SlackUser[] = [
    { login: 'alice', id: 'U0EMUALICE' },
    { login: 'bob', id: 'U0EMUBOB01' },
  ];
  const messages: SlackMessage[] = [
    {
      text: 'The quarterly report is in #general',
      channel: { id: 'C0EMUGEN01', name: 'general' },
      ts: '1700000000.000100',
    },
    { text: 'Quarterly numbers look good', channel: { id: 'C0EMURND01', name: 'random' }, ts: '1700000100.000200' },
    { text: 'Lunch at noon?', channel: { id: 'C0EMURND01', name: 'random' }, ts: '1700000200.000300' },
  ];
  const pending = new Map<string, Pending>();
  const codes = new Map<string, Code>();
  const tokens = new Map<string, Token>();
  const issuedTo: { login: string; user: string; bot: string | undefined }[] = [];
  const tokenRequests: SeenRequest[] = [];
  const apiCalls: SeenRequest[] = [];

  function authorize(seen: SeenRequest, res: ServerResponse): void {
    const q = seen.query;
    // No client or redirect URI to trust: an error page, never a redirect (RFC 6749 §4.1.2.1).
    if (q.get('client_id') !== clientId) return errorPage(res, 'Slack', 'invalid_client_id');
    const sent = q.get('redirect_uri') ?? undefined;
    if (sent !== undefined && sent !== options.redirectUri) return errorPage(res, 'Slack', 'bad_redirect_uri');
    const userScopes = scopesOf(q.get('user_scope'));
    const botScopes = scopesOf(q.get('scope'));
    if (userScopes.length === 0 && botScopes.length === 0) return errorPage(res, 'Slack', 'invalid_scope');
    const challenge = q.get('code_challenge') ?? undefined;
    if (challenge !== undefined && q.get('code_challenge_method') !== 'S256')
      return errorPage(res, 'Slack', 'invalid_code_challenge_method');
    const requestId = randomId();
    pending.set(requestId, {
      redirectUri: sent ?? options.redirectUri,
      sentRedirectUri: sent,
      state: q.get('state') ?? undefined,
      userScopes,
      botScopes,
      codeChallenge: challenge,
    });
    const asks = [...userScopes.map((s) => `As you: ${s}`), ...botScopes.map((s) => `As the app: ${s}`)];
    sendHtml(res, 200, consentPage({ provider: 'Slack', app: CLIENT_NAME, asks, action: AUTHORIZE_PATH, requestId }));
  }

  const decide = (seen: SeenRequest, res: ServerResponse) =>
    answerConsent(seen, res, {
      provider: 'Slack',
      host: HOST,
      action: AUTHORIZE_PATH,
      pending,
      users,
      issue: (request, user) => {
        const code = `${team.id}.${randomId()}`;
        codes.set(code, { ...request, user, expiresAt: now() + CODE_TTL_MS });
        return code;
      },
    });

  function access(seen: SeenRequest, res: ServerResponse): void {
    tokenRequests.push(seen);
    const refuse = (error: string) => sendJson(res, 200, { ok: false, error });
    const params = bodyParams(seen);
    if (!params) return refuse('invalid_form_data');
    const basic = basicCredentials(seen.headers);
    const id = basic?.id ?? params['client_id'];
    const secret = basic?.secret ?? params['client_secret'];
    if (id !== clientId) return refuse('invalid_client_id');
    if (secret !== clientSecret) return refuse('bad_client_secret');
    if (params['grant_type'] !== undefined && params['grant_type'] !== 'authorization_code')
      return refuse('invalid_grant_type');
    const code = codes.get(params['code'] ?? '');
    // Single-use: a code is spent by its first exchange, whatever the outcome.
    if (code) codes.delete(params['code']!);
    if (!code || code.expiresAt <= now()) return refuse('invalid_code');
    if (code.sentRedirectUri !== undefined && params['redirect_uri'] !== code.sentRedirectUri)
      return refuse('bad_redirect_uri');
    if (
      code.codeChallenge !== undefined &&
      (params['code_verifier'] === undefined || s256(params['code_verifier']) !== code.codeChallenge)
    )
      return refuse('invalid_code');
    const userToken = code.userScopes.length > 0 ? canaryValue('xoxp-') : undefined;
    const botToken = code.botScopes.length > 0 ? canaryValue('xoxb-') : undefined;
    if (userToken) tokens.set(userToken, { user: code.user, type: 'user', scopes: code.userScopes, revoked: false });
    if (botToken) tokens.set(botToken, { user: code.user, type: 'bot', scopes: code.botScopes, revoked: false });
    if (userToken) issuedTo.push({ login: code.user.login, user: userToken, bot: botToken });
    sendJson(res, 200, {
      ok: true,
      ...(botToken && {
        access_token: botToken,
        token_type: 'bot',
        scope: code.botScopes.join(','),
        bot_user_id: 'U0EMUBOT01',
      }),
      app_id: appId,
      team,
      enterprise: null,
      is_enterprise_install: false,
      authed_user: {
        id: code.user.id,
        ...(userToken && { scope: code.userScopes.join(','), access_token: userToken, token_type: 'user' }),
      },
    });
  }

  function searchMessages(seen: SeenRequest, res: ServerResponse): void {
    apiCalls.push(seen);
    const presented = bearerToken(seen.headers);
    if (presented === undefined) return sendJson(res, 200, { ok: false, error: 'not_authed' });
    const token = tokens.get(presented);
    if (!token) return sendJson(res, 200, { ok: false, error: 'invalid_auth' });
    if (token.revoked) return sendJson(res, 200, { ok: false, error: 'token_revoked' });
    if (token.type !== 'user') return sendJson(res, 200, { ok: false, error: 'not_allowed_token_type' });
    if (!token.scopes.includes('search:read'))
      return sendJson(res, 200, {
        ok: false,
        error: 'missing_scope',
        needed: 'search:read',
        provided: token.scopes.join(','),
      });
    const query = (seen.method === 'POST' ? bodyParams(seen)?.['query'] : seen.query.get('query')) ?? '';
    if (query === '') return sendJson(res, 200, { ok: false, error: 'no_query' });
    const matches = messages.filter((m) => m.text.toLowerCase().includes(query.toLowerCase()));
    sendJson(res, 200, {
      ok: true,
      query,
      messages: {
        total: matches.length,
        matches: matches.map((m) => ({
          type: 'message',
          text: m.text,
          ts: m.ts,
          channel: m.channel,
          team: team.id,
          permalink: `https://emulated.slack.com/archives/${m.channel.id}/p${m.ts.replace('.', '')}`,
        })),
        paging: { count: 20, total: matches.length, page: 1, pages: 1 },
      },
    });
  }

  const server = await serveEmulator(
    options.tls,
    HOST,
    {
      [`GET ${AUTHORIZE_PATH}`]: authorize,
      [`POST ${AUTHORIZE_PATH}`]: decide,
      'POST /api/oauth.v2.access': access,
      'GET /api/search.messages': searchMessages,
      'POST /api/search.messages': searchMessages,
    },
    (seen, res) =>
      seen.path.startsWith('/api/')
        ? sendJson(res, 200, { ok: false, error: 'unknown_method' })
        : res.writeHead(404).end(),
  );

  return {
    origin: server.origin,
    clientId,
    clientSecret,
    team,
    appId,
    users,
    tokenRequests,
    apiCalls,
    tokensOf: (login) => issuedTo.filter((t) => t.login === login).map(({ user, bot }) => ({ user, bot })),
    issued: () => [...tokens.keys()],
    revokeTokensOf(login) {
      for (const token of tokens.values()) if (token.user.login === login) token.revoked = true;
    },
    close: () => server.close(),
  };
}
