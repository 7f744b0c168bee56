import type { CatalogEntryInput } from './catalogEntry.js';

// Notion public integration.
// - `https://api.notion.com/v1/oauth/authorize` with `owner=user`; token at
//   `POST /v1/oauth/token` with HTTP Basic client authentication; the answer
//   carries `owner.user.id`, `workspace_id` and a refresh token that may be
//   null (the `notion` conformer):
//   https://developers.notion.com/reference/create-a-token
// - Every API request needs a `Notion-Version` header; pinned here because a
//   new version changes response shapes tools read:
//   https://developers.notion.com/reference/versioning
// - No scopes: the user picks pages on Notion's consent screen. Notion's
//   revoke endpoint takes a JSON body, not RFC 7009's form, so none is listed.
export const notion: CatalogEntryInput = {
  id: 'notion',
  displayName: 'Notion',
  kind: 'oauth2',
  docs: 'https://developers.notion.com/reference/create-a-token',
  authorizationEndpoint: 'https://api.notion.com/v1/oauth/authorize',
  tokenEndpoint: 'https://api.notion.com/v1/oauth/token',
  identity: { from: 'tokenResponse', subjectPath: 'owner.user.id', namePath: 'owner.user.name' },
  clientAuth: 'client_secret_basic',
  pkce: false,
  authorizeParams: { owner: 'user' },
  conformer: 'notion',
  apiBase: 'https://api.notion.com/v1',
  apiHeaders: { 'Notion-Version': '2022-06-28' },
};
