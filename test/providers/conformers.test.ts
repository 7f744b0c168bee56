import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ConformedTokenResponse, RawTokenResponse } from '../../src/providers/conformers/conformer.js';
import {
  conformerFor,
  conformerNames,
  isConformerName,
  type ConformerName,
} from '../../src/providers/conformers/registry.js';

// Token-response conformers, on fixtures written from each provider's own
// documentation (values invented, shapes as documented; the page is cited
// beside each case), then on hostile and random answers.

function fixture(name: string): RawTokenResponse {
  return JSON.parse(
    readFileSync(new URL(`./conformers/fixtures/${name}.json`, import.meta.url), 'utf8'),
  ) as RawTokenResponse;
}

const bearer = (body: Record<string, unknown>, extras: Record<string, string> = {}) => ({
  status: 200,
  body: { token_type: 'Bearer', ...body },
  extras,
});
const refused = (error: string, error_description: string) => ({ status: 400, body: { error, error_description } });

interface Case {
  fixture: string;
  conformer: ConformerName;
  source: string;
  expected: unknown;
}

const SLACK_TEAM = {
  'team.id': 'T0FIXTEAM',
  'team.name': 'Fixture Team',
  app_id: 'A0FIXAPP1',
  'authed_user.id': 'U0FIXUSER',
};

const cases: Case[] = [
  // RFC 6749 §5.1 https://www.rfc-editor.org/rfc/rfc6749#section-5.1
  {
    fixture: 'standard-rfc6749',
    conformer: 'standard',
    source: 'RFC 6749 §5.1',
    expected: bearer({
      access_token: 'std-at-7f3a9c2e',
      expires_in: 3600,
      refresh_token: 'std-rt-51b0d4e8',
      scope: 'read write',
    }),
  },
  // RFC 6749 §5.1 and OpenID Connect Core 1.0 §3.1.3.3 (id_token); the slips are a lower-case type, a string lifetime, an empty refresh token
  {
    fixture: 'standard-slips',
    conformer: 'standard',
    source: 'RFC 6749 §5.1; OpenID Connect Core 1.0 §3.1.3.3',
    expected: bearer({
      access_token: 'std-at-slips-0c8e',
      expires_in: 3599,
      scope: 'openid email',
      id_token: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMTAxNjkifQ.c2lnbmF0dXJl',
    }),
  },
  // RFC 6749 §5.2 https://www.rfc-editor.org/rfc/rfc6749#section-5.2
  {
    fixture: 'standard-invalid-grant',
    conformer: 'standard',
    source: 'RFC 6749 §5.2',
    expected: refused('invalid_grant', 'The authorization code has expired.'),
  },
  {
    fixture: 'standard-server-error',
    conformer: 'standard',
    source: 'RFC 9110 §15.6.4',
    expected: refused('temporarily_unavailable', 'The token endpoint failed (HTTP 503).'),
  },
  // GitHub, "Authorizing OAuth apps" https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps
  // (form-encoded by default, JSON with Accept: application/json; scopes "repo,gist")
  {
    fixture: 'github-json',
    conformer: 'github',
    source: 'GitHub: Authorizing OAuth apps',
    expected: bearer({ access_token: 'gho_fixtureOAuthAppToken0001', scope: 'repo gist' }),
  },
  {
    fixture: 'github-form',
    conformer: 'github',
    source: 'GitHub: Authorizing OAuth apps',
    expected: bearer({ access_token: 'gho_fixtureOAuthAppToken0002', scope: 'repo user' }),
  },
  // GitHub, "Refreshing user access tokens" https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/refreshing-user-access-tokens
  // (the Enterprise Server 3.0 edition of the page shows "expires_in": "28800" as a string)
  {
    fixture: 'github-app-user-token',
    conformer: 'github',
    source: 'GitHub: Refreshing user access tokens',
    expected: bearer({
      access_token: 'ghu_fixtureUserToken0003',
      expires_in: 28800,
      refresh_token: 'ghr_fixtureRefreshToken0003',
      scope: '',
    }),
  },
  // GitHub, "Troubleshooting OAuth app access token request errors"
  // https://docs.github.com/en/apps/oauth-apps/maintaining-oauth-apps/troubleshooting-oauth-app-access-token-request-errors
  {
    fixture: 'github-bad-verification-code',
    conformer: 'github',
    source: 'GitHub: Troubleshooting',
    expected: refused('invalid_grant', 'bad_verification_code: The code passed is incorrect or expired.'),
  },
  {
    fixture: 'github-incorrect-client-credentials-form',
    conformer: 'github',
    source: 'GitHub: Troubleshooting',
    expected: refused(
      'invalid_client',
      'incorrect_client_credentials: The client_id and/or client_secret passed are incorrect.',
    ),
  },
  // Slack, oauth.v2.access https://docs.slack.dev/reference/methods/oauth.v2.access (example answer with a bot and a user token)
  {
    fixture: 'slack-v2-access',
    conformer: 'slack',
    source: 'Slack: oauth.v2.access',
    expected: bearer(
      { access_token: 'xoxp-fixture-user-token-0004', scope: 'chat:write search:read' },
      { ...SLACK_TEAM, 'enterprise.id': 'E0FIXENT1', 'enterprise.name': 'fixture-enterprise' },
    ),
  },
  {
    fixture: 'slack-v2-access',
    conformer: 'slack-bot',
    source: 'Slack: oauth.v2.access',
    expected: bearer(
      { access_token: 'xoxb-fixture-bot-token-0004', scope: 'commands incoming-webhook' },
      {
        ...SLACK_TEAM,
        'enterprise.id': 'E0FIXENT1',
        'enterprise.name': 'fixture-enterprise',
        bot_user_id: 'U0FIXBOT1',
      },
    ),
  },
  // Slack, "Using token rotation" https://docs.slack.dev/authentication/using-token-rotation (expiring user token, 12 h, and a refresh token)
  {
    fixture: 'slack-v2-access-rotating-user',
    conformer: 'slack',
    source: 'Slack: Using token rotation',
    expected: bearer(
      {
        access_token: 'xoxe.xoxp-fixture-user-token-0005',
        expires_in: 43200,
        refresh_token: 'xoxe-1-fixture-refresh-0005',
        scope: 'chat:write',
      },
      { ...SLACK_TEAM, is_enterprise_install: 'false' },
    ),
  },
  // Slack, oauth.v2.user.access https://docs.slack.dev/reference/methods/oauth.v2.user.access (user token top level)
  {
    fixture: 'slack-v2-user-access',
    conformer: 'slack',
    source: 'Slack: oauth.v2.user.access',
    expected: bearer(
      {
        access_token: 'xoxp-fixture-user-token-0006',
        scope: 'openid email profile',
        id_token: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJVMEZJWFVTRVIifQ.c2ln',
      },
      { 'team.id': 'T0FIXTEAM', 'authed_user.id': 'U0FIXUSER' },
    ),
  },
  // Slack, oauth.v2.access "Errors" (invalid_code), answered with HTTP 200 and ok: false
  {
    fixture: 'slack-invalid-code',
    conformer: 'slack',
    source: 'Slack: oauth.v2.access errors',
    expected: refused('invalid_grant', 'invalid_code: Slack refused the request.'),
  },
  // Notion, "Create a token" https://developers.notion.com/reference/create-a-token
  {
    fixture: 'notion-token-user-owner',
    conformer: 'notion',
    source: 'Notion: Create a token',
    expected: bearer(
      { access_token: 'ntn_fixtureAccessToken0007' },
      {
        bot_id: '3c90c3cc-0d44-4b50-8888-8dd25736b0f1',
        workspace_id: '8f1d2a3b-5c6d-4e7f-8a9b-0c1d2e3f4a5b',
        workspace_name: 'Fixture Workspace',
        'owner.type': 'user',
        'owner.user.id': '5389a034-eb5c-47b5-8a9e-f79c99ef0007',
      },
    ),
  },
  // Notion changelog, "OAuth token response now includes workspace ID and owner info"
  // https://developers.notion.com/changelog/oauth-token-response-now-includes-more-info-about-the-workspace (no token_type, owner {workspace: true})
  {
    fixture: 'notion-token-workspace-owner',
    conformer: 'notion',
    source: 'Notion changelog',
    expected: bearer(
      { access_token: 'secret_fixtureLegacyToken0008' },
      {
        bot_id: 'b3414d65-1224-4ef7-8ffa-cc9d8773d008',
        workspace_id: 'j565j4d7-2882-41bb-864a-009d9a1c3008',
        workspace_name: 'Fixture Legacy Workspace',
        'owner.workspace': 'true',
      },
    ),
  },
  // Notion, "Status codes" https://developers.notion.com/reference/status-codes (400 invalid_grant)
  {
    fixture: 'notion-invalid-grant',
    conformer: 'notion',
    source: 'Notion: Status codes',
    expected: refused('invalid_grant', 'Invalid code: this code has been revoked.'),
  },
  // Salesforce, "OAuth 2.0 Web Server Flow for Web App Integration"
  // https://help.salesforce.com/s/articleView?id=xcloud.remoteaccess_oauth_web_server_flow_ca.htm (no expires_in: the org's session timeout applies)
  {
    fixture: 'salesforce-web-server',
    conformer: 'salesforce',
    source: 'Salesforce: Web Server Flow',
    expected: bearer(
      {
        access_token: '00DFIX0000000001!AQ0AQFixtureSessionToken0009',
        refresh_token: '5AepFixtureRefreshToken0009',
        scope: 'refresh_token api id',
      },
      {
        instance_url: 'https://fixture-org.my.salesforce.com',
        id: 'https://login.salesforce.com/id/00DFIX0000000001/005FIX0000000001',
        issued_at: '1722470400000',
      },
    ),
  },
  {
    fixture: 'salesforce-invalid-grant',
    conformer: 'salesforce',
    source: 'Salesforce: Web Server Flow',
    expected: refused('invalid_grant', 'authentication failure'),
  },
  // Microsoft identity platform, "OAuth 2.0 authorization code flow" https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-auth-code-flow
  // (an ID token only with openid, issued by the user's tenant: dropped; ext_expires_in from …/v2-oauth2-client-creds-grant-flow; Entra's error members)
  {
    fixture: 'microsoft-v2-code-openid',
    conformer: 'microsoft',
    source: 'Microsoft: authorization code flow',
    expected: bearer({
      access_token: 'EwBfixture-entra-access-token-0010',
      expires_in: 3599,
      refresh_token: 'M.R3_BAY.fixture-entra-refresh-token-0010',
      scope: 'openid profile offline_access User.Read',
    }),
  },
  {
    fixture: 'microsoft-invalid-grant',
    conformer: 'microsoft',
    source: 'Microsoft: authorization code flow',
    expected: refused(
      'invalid_grant',
      'AADSTS70008: The provided authorization code or refresh token has expired due to inactivity. Trace ID: 0000aaaa-11bb-cccc-dd22-eeeeee333333 Correlation ID: aaaa0000-bb11-2222-33cc-444444dddddd Timestamp: 2016-01-09 02:02:12Z',
    ),
  },
];

describe('token-response conformers on documented answers', () => {
  it.each(cases)('$conformer conforms $fixture ($source)', ({ fixture: name, conformer, expected }) => {
    expect(conformerFor(conformer)(fixture(name))).toEqual(expected);
  });

  it('an error inside HTTP 200 (GitHub, Slack) becomes an RFC 6749 §5.2 error, never a token', () => {
    expect(conformerFor('github')(fixture('github-bad-verification-code')).status).toBe(400);
    expect(conformerFor('slack')(fixture('slack-invalid-code')).status).toBe(400);
    expect(conformerFor('standard')({ status: 200, headers: {}, body: { error: 'access_denied' } })).toEqual({
      status: 400,
      body: { error: 'access_denied' },
    });
  });

  it('a Slack user-token connection keeps neither the bot token nor the webhook URL', () => {
    const out = JSON.stringify(conformerFor('slack')(fixture('slack-v2-access')));
    expect(out).not.toContain('xoxb-');
    expect(out).not.toContain('fixtureWebhookSecret');
  });

  it('a Slack answer with only a bot token is refused for a user-token connection', () => {
    const raw = fixture('slack-v2-access');
    const body = { ...(raw.body as Record<string, unknown>), authed_user: { id: 'U0FIXUSER' } };
    expect(conformerFor('slack')({ ...raw, body })).toMatchObject({ status: 400, body: { error: 'invalid_response' } });
  });

  it('Salesforce without a plain https instance_url is refused, since it would be the API base', () => {
    const raw = fixture('salesforce-web-server');
    const body = raw.body as Record<string, unknown>;
    for (const instanceUrl of [
      undefined,
      'http://fixture-org.my.salesforce.com',
      'https://user:pw@fixture-org.my.salesforce.com',
      'not a url',
    ]) {
      expect(conformerFor('salesforce')({ ...raw, body: { ...body, instance_url: instanceUrl } })).toMatchObject({
        status: 400,
        body: { error: 'invalid_response' },
      });
    }
  });

  it('a token type the broker cannot send (DPoP, MAC) is refused', () => {
    for (const tokenType of ['DPoP', 'mac', 'bot']) {
      expect(
        conformerFor('standard')({ status: 200, headers: {}, body: { access_token: 'at', token_type: tokenType } }),
      ).toMatchObject({ status: 400 });
    }
  });

  it('the registry is the one table: every name resolves, and nothing else is a name', () => {
    expect([...conformerNames].sort()).toEqual([
      'github',
      'microsoft',
      'notion',
      'salesforce',
      'slack',
      'slack-bot',
      'standard',
    ]);
    for (const name of conformerNames) expect(typeof conformerFor(name)).toBe('function');
    for (const name of ['__proto__', 'toString', 'constructor', 'hasOwnProperty', 'Slack', ''])
      expect(isConformerName(name)).toBe(false);
  });
});

// ---------------------------------------------------------------- hostile and random answers

const CANARY = 'canary-Tok3n-9f8e7d6c5b4a';

/** The two shapes a conformer may return, as strict as openid-client reads them (oauth4webapi processGenericAccessTokenResponse). */
const ConformedSchema = z.union([
  z.strictObject({
    status: z.literal(200),
    body: z.strictObject({
      access_token: z.string().regex(/^[\x20-\x7E]+$/),
      token_type: z.literal('Bearer'),
      expires_in: z.number().int().positive().optional(),
      refresh_token: z
        .string()
        .regex(/^[\x20-\x7E]+$/)
        .optional(),
      scope: z.string().optional(),
      id_token: z.string().min(1).optional(),
    }),
    extras: z.record(z.string(), z.string()),
  }),
  z.strictObject({
    status: z.literal(400),
    body: z.strictObject({
      error: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
      error_description: z
        .string()
        .regex(/^[\x20\x21\x23-\x5B\x5D-\x7E]*$/)
        .optional(),
    }),
  }),
]);

function nested(depth: number, leaf: Record<string, unknown>): unknown {
  return depth === 0 ? leaf : { inner: nested(depth - 1, leaf) };
}

const hostile: RawTokenResponse[] = [
  { status: 200, headers: {}, body: { access_token: CANARY, token_type: 'mac' } },
  {
    status: 200,
    headers: {},
    body: { access_token: CANARY, error: 'invalid_grant', error_description: `token ${CANARY} was refused` },
  },
  { status: 400, headers: {}, body: { refresh_token: CANARY, error: CANARY } },
  { status: 200, headers: {}, body: { ok: false, error: CANARY, authed_user: { access_token: CANARY } } },
  {
    status: 400,
    headers: {},
    body: { object: 'error', code: 'invalid_grant', message: `revoked ${CANARY}`, access_token: CANARY },
  },
  { status: 500, headers: {}, body: { access_token: CANARY } },
  {
    status: 200,
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: `access_token=${CANARY}&token_type=mac`,
  },
  { status: 200, headers: {}, body: `error=${CANARY}&error_description=${CANARY}&access_token=${CANARY}` },
  {
    status: 200,
    headers: {},
    body: { error: 'invalid_grant', error_description: CANARY, deep: nested(40, { id_token: CANARY }) },
  },
  { status: 200, headers: {}, body: { access_token: `${CANARY}\r\nX-Injected: 1`, token_type: 'Bearer' } },
  {
    status: 200,
    headers: {},
    body: { access_token: CANARY, token_type: 'Bearer', instance_url: 'http://evil.example' },
  },
  { status: 200, headers: {}, body: { ok: true, access_token: CANARY, token_type: 'bot', authed_user: { id: 'U1' } } },
];

function errorOutputs(out: ConformedTokenResponse): string {
  return out.status === 400 ? JSON.stringify(out) : JSON.stringify(out.extras);
}

describe('token-response conformers on hostile and random answers', () => {
  it.each(conformerNames)('%s never puts a token value into an error or the extras', (name) => {
    for (const raw of hostile) {
      const out = conformerFor(name)(raw);
      expect(ConformedSchema.safeParse(out).success).toBe(true);
      expect(errorOutputs(out)).not.toContain(CANARY);
    }
  });

  const anything = fc.anything({
    withNullPrototype: true,
    withBoxedValues: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withTypedArray: true,
    withSparseArray: true,
    withBigInt: true,
  });
  const member = fc.oneof(
    fc.constant(CANARY),
    fc.constant(`x ${CANARY} y`),
    fc.string(),
    fc.integer(),
    fc.constant(null),
    fc.boolean(),
    anything,
  );
  const tokenish = fc.record(
    {
      access_token: fc.oneof(fc.constant(CANARY), member),
      refresh_token: fc.oneof(fc.constant(CANARY), member),
      token_type: fc.oneof(fc.constantFrom('Bearer', 'bearer', 'bot', 'user', 'DPoP'), member),
      expires_in: fc.oneof(fc.integer(), fc.double(), fc.constantFrom('3600', ' 42 ', '-1', '1e9', 'soon'), member),
      scope: fc.oneof(fc.string(), fc.array(fc.string()), member),
      error: fc.oneof(fc.constantFrom('invalid_grant', 'bad_verification_code', 'invalid_code'), member),
      error_description: member,
      ok: fc.oneof(fc.boolean(), member),
      object: fc.oneof(fc.constant('error'), member),
      code: member,
      message: member,
      authed_user: fc.oneof(
        fc.record(
          { access_token: fc.oneof(fc.constant(CANARY), member), token_type: member, scope: member, id: member },
          { requiredKeys: [] },
        ),
        member,
      ),
      instance_url: fc.oneof(fc.constantFrom('https://a.my.salesforce.com', 'http://a', 'x'), member),
      team: fc.oneof(fc.record({ id: member, name: member }, { requiredKeys: [] }), member),
    },
    { requiredKeys: [] },
  );
  const headers = fc.oneof(
    fc.dictionary(fc.string(), fc.string()),
    fc.constant({ 'content-type': 'application/x-www-form-urlencoded' }),
    anything,
  );
  const asForm = (record: Record<string, unknown>) =>
    new URLSearchParams(
      Object.entries(record).flatMap(([key, value]) =>
        typeof value === 'string' ? [[key, value] as [string, string]] : [],
      ),
    ).toString();
  const status = fc.oneof(fc.constant(200), fc.integer({ min: 100, max: 599 }), anything);
  const body = fc.oneof(tokenish, anything, fc.string(), tokenish.map(asForm));
  const raw = fc.oneof(fc.record({ status, headers, body }), anything);

  it.each(conformerNames)('%s never throws and always answers one of the two shapes', (name) => {
    const conform = conformerFor(name);
    fc.assert(
      fc.property(raw, (input) => {
        expect(ConformedSchema.safeParse(conform(input as RawTokenResponse)).success).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  // The answer carries the canary as its token(s); wherever else the provider writes it, no error and no extra repeats it.
  const withCanaryToken = tokenish.map((record) => ({
    ...record,
    access_token: CANARY,
    authed_user: { access_token: CANARY, id: 'U1' },
  }));
  const canaryBody = fc.oneof(withCanaryToken, withCanaryToken.map(asForm));

  it.each(conformerNames)('%s never repeats a token of the answer in an error or the extras', (name) => {
    const conform = conformerFor(name);
    fc.assert(
      fc.property(fc.record({ status, headers, body: canaryBody }), (input) => {
        const out = conform(input as RawTokenResponse);
        expect(ConformedSchema.safeParse(out).success).toBe(true);
        expect(errorOutputs(out)).not.toContain(CANARY);
      }),
      { numRuns: 400 },
    );
  });
});
