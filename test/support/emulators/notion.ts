import { randomUUID } from 'node:crypto';
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
  redirectWith,
  sendHtml,
  sendJson,
  serveEmulator,
  type PendingConsent,
  type SeenRequest,
} from './slackNotionShared.js';

// Notion's public-integration OAuth and a sliver of its API, as its documentation describes them:
// - Authorization (https://developers.notion.com/docs/authorization): GET
//   https://api.notion.com/v1/oauth/authorize with `client_id`, `response_type=code`,
//   `owner=user`, `redirect_uri`, `state`; no scopes (the user picks pages on Notion's
//   consent screen) and no PKCE; a user who cancels comes back with `error=access_denied`.
// - Create a token (https://developers.notion.com/reference/create-a-token): POST
//   /v1/oauth/token, client credentials in HTTP Basic, `grant_type=authorization_code`,
//   `code`, `redirect_uri` (required when the authorization URL carried one, refused when
//   it did not and one URI is registered). The answer carries `access_token`,
//   `token_type: "bearer"`, `refresh_token` (null where none is issued), `bot_id`,
//   `workspace_id`, `workspace_name`, `workspace_icon`, `owner: {type: "user", user: {…}}`,
//   `duplicated_template_id`, `request_id`. The page documents a JSON body; this emulator
//   also takes RFC 6749 §4.1.3's form encoding, which OAuth clients send (not re-checked
//   against Notion) and records which one came.
// - Status codes (https://developers.notion.com/reference/status-codes): errors are
//   `{object: "error", status, code, message, request_id}`: 401 `unauthorized` for a
//   token that is not valid, 400 `missing_version` without `Notion-Version`
//   (https://developers.notion.com/reference/versioning), 400 `invalid_grant` for a bad code.
// - Search (https://developers.notion.com/reference/post-search): POST /v1/search with a
//   JSON `query`, answering `{object: "list", results, next_cursor, has_more}` over the
//   pages shared with the integration.

const HOST = 'api.notion.com';
const AUTHORIZE_PATH = '/v1/oauth/authorize';
const CODE_TTL_MS = 10 * 60_000;

export interface NotionUser {
  /** What the user types in the consent page's account field. */
  login: string;
  id: string;
  name: string;
  email: string;
}

export interface NotionEmulator {
  origin: string;
  clientId: string;
  clientSecret: string;
  workspace: { id: string; name: string };
  botId: string;
  users: readonly NotionUser[];
  /** Every token request and API call, in order. */
  tokenRequests: SeenRequest[];
  apiCalls: SeenRequest[];
  /** The access tokens issued to `login`, newest last. */
  tokensOf(login: string): string[];
  issued(): string[];
  /** Withdraws every token issued to `login` (the user removed the integration). */
  revokeTokensOf(login: string): void;
  close(): Promise<void>;
}

interface Pending extends PendingConsent {
  sentRedirectUri: string | undefined;
}

const notionError = (res: ServerResponse, status: number, code: string, message: string) =>
  sendJson(res, status, { object: 'error', status, code, message, request_id: randomUUID() });

export async function startNotionEmulator(options: {
  tls: TlsMaterial;
  redirectUri: string;
  now?: () => number;
}): Promise<NotionEmulator> {
  const now = options.now ?? Date.now;
  const clientId = randomUUID();
  const clientSecret = canaryValue('secret_');
  const workspace = { id: randomUUID(), name: 'Emulated Workspace' };
  const botId = randomUUID();
  const users: NotionUser[] = [
    { login: 'alice', id: randomUUID(), name: 'Alice Notion', email: 'alice@example.test' },
    { login: 'bob', id: randomUUID(), name: 'Bob Notion', email: 'bob@example.test' },
  ];
  const pages = [
    { id: randomUUID(), title: 'Quarterly planning' },
    { id: randomUUID(), title: 'Quarterly review notes' },
    { id: randomUUID(), title: 'Team lunch menu' },
  ];
  const pending = new Map<string, Pending>();
  const codes = new Map<string, Pending & { user: NotionUser; expiresAt: number }>();
  const tokens = new Map<string, { user: NotionUser; revoked: boolean }>();
  const tokenRequests: SeenRequest[] = [];
  const apiCalls: SeenRequest[] = [];

  function authorize(seen: SeenRequest, res: ServerResponse): void {
    const q = seen.query;
    if (q.get('client_id') !== clientId) return errorPage(res, 'Notion', 'invalid_client');
    const sent = q.get('redirect_uri') ?? undefined;
    if (sent !== undefined && sent !== options.redirectUri) return errorPage(res, 'Notion', 'invalid_redirect_uri');
    const redirectUri = sent ?? options.redirectUri;
    const state = q.get('state') ?? undefined;
    // RFC 6749 §4.1.2.1's codes: Notion's guide names none for these.
    if (q.get('response_type') !== 'code')
      return redirectWith(res, redirectUri, { error: 'unsupported_response_type', state });
    if (q.get('owner') !== 'user') return redirectWith(res, redirectUri, { error: 'invalid_request', state });
    const requestId = randomId();
    pending.set(requestId, { redirectUri, sentRedirectUri: sent, state });
    const asks = ['Read content of the pages you select', `In ${workspace.name}`];
    sendHtml(res, 200, consentPage({ provider: 'Notion', app: CLIENT_NAME, asks, action: AUTHORIZE_PATH, requestId }));
  }

  const decide = (seen: SeenRequest, res: ServerResponse) =>
    answerConsent(seen, res, {
      provider: 'Notion',
      host: HOST,
      action: AUTHORIZE_PATH,
      pending,
      users,
      issue: (request, user) => {
        const code = randomUUID();
        codes.set(code, { ...request, user, expiresAt: now() + CODE_TTL_MS });
        return code;
      },
    });

  function token(seen: SeenRequest, res: ServerResponse): void {
    tokenRequests.push(seen);
    const basic = basicCredentials(seen.headers);
    if (basic?.id !== clientId || basic.secret !== clientSecret)
      return notionError(res, 401, 'unauthorized', 'Invalid client credentials.');
    const params = bodyParams(seen);
    if (!params) return notionError(res, 400, 'invalid_request', 'Body failed validation.');
    if (params['grant_type'] !== 'authorization_code')
      return notionError(res, 400, 'unsupported_grant_type', 'Unsupported grant type.');
    const code = codes.get(params['code'] ?? '');
    if (code) codes.delete(params['code']!);
    if (!code || code.expiresAt <= now())
      return notionError(res, 400, 'invalid_grant', 'Invalid code: this code has been revoked.');
    if (
      code.sentRedirectUri !== undefined
        ? params['redirect_uri'] !== code.sentRedirectUri
        : params['redirect_uri'] !== undefined
    ) {
      return notionError(res, 400, 'invalid_grant', 'Invalid redirect_uri.');
    }
    const accessToken = canaryValue('ntn_');
    tokens.set(accessToken, { user: code.user, revoked: false });
    sendJson(res, 200, {
      access_token: accessToken,
      token_type: 'bearer',
      refresh_token: null,
      bot_id: botId,
      workspace_name: workspace.name,
      workspace_icon: null,
      workspace_id: workspace.id,
      owner: {
        type: 'user',
        user: {
          object: 'user',
          id: code.user.id,
          name: code.user.name,
          avatar_url: null,
          type: 'person',
          person: { email: code.user.email },
        },
      },
      duplicated_template_id: null,
      request_id: randomUUID(),
    });
  }

  function search(seen: SeenRequest, res: ServerResponse): void {
    apiCalls.push(seen);
    const presented = bearerToken(seen.headers);
    const held = presented === undefined ? undefined : tokens.get(presented);
    if (!held || held.revoked) return notionError(res, 401, 'unauthorized', 'API token is invalid.');
    if (seen.headers['notion-version'] === undefined)
      return notionError(
        res,
        400,
        'missing_version',
        'Notion-Version header failed validation: Notion-Version header should be defined.',
      );
    let query = '';
    try {
      const body: unknown = seen.body === '' ? {} : JSON.parse(seen.body);
      const asked = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['query'] : undefined;
      if (asked !== undefined && typeof asked !== 'string')
        return notionError(res, 400, 'validation_error', 'body.query should be a string.');
      query = asked ?? '';
    } catch {
      return notionError(res, 400, 'invalid_json', 'Error parsing JSON body.');
    }
    const found = pages.filter((p) => p.title.toLowerCase().includes(query.toLowerCase()));
    sendJson(res, 200, {
      object: 'list',
      results: found.map((p) => ({
        object: 'page',
        id: p.id,
        url: `https://www.notion.so/${p.id.replace(/-/g, '')}`,
        properties: {
          title: {
            id: 'title',
            type: 'title',
            title: [{ type: 'text', plain_text: p.title, text: { content: p.title } }],
          },
        },
      })),
      next_cursor: null,
      has_more: false,
      type: 'page_or_database',
      page_or_database: {},
      request_id: randomUUID(),
    });
  }

  const server = await serveEmulator(
    options.tls,
    HOST,
    {
      [`GET ${AUTHORIZE_PATH}`]: authorize,
      [`POST ${AUTHORIZE_PATH}`]: decide,
      'POST /v1/oauth/token': token,
      'POST /v1/search': search,
    },
    (_seen, res) => notionError(res, 400, 'invalid_request_url', 'Invalid request URL.'),
  );

  return {
    origin: server.origin,
    clientId,
    clientSecret,
    workspace,
    botId,
    users,
    tokenRequests,
    apiCalls,
    tokensOf: (login) => [...tokens].filter(([, t]) => t.user.login === login).map(([value]) => value),
    issued: () => [...tokens.keys()],
    revokeTokensOf(login) {
      for (const held of tokens.values()) if (held.user.login === login) held.revoked = true;
    },
    close: () => server.close(),
  };
}
