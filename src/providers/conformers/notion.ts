import type { Conformer } from './conformer.js';
import { conformWith } from './standard.js';

// Notion's POST /v1/oauth/token (developers.notion.com/reference/create-a-token)
// returns `refresh_token: null` where it issues none, which openid-client
// refuses, and describes the authorization: `bot_id`, `workspace_id`,
// `workspace_name`, and `owner` (`{type: "user", user: {id, …}}`, or
// `{workspace: true}` in older answers). Its API errors are
// `{object: "error", status, code, message}` (developers.notion.com/reference/status-codes).
export const notion: Conformer = (raw, keep) =>
  conformWith(
    raw,
    {
      errorIn: (body) =>
        body['object'] === 'error' ? { code: body['code'], description: body['message'] } : undefined,
      extras: [
        'bot_id',
        'workspace_id',
        'workspace_name',
        'owner.type',
        'owner.user.id',
        'owner.workspace',
        'duplicated_template_id',
      ],
    },
    keep,
  );
