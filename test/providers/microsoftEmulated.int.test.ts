import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConnectionTool } from '../../src/mcp/defineConnectionTool.js';
import { completeResult } from '../../src/mcp/defineTool.js';
import { API_USER_AGENT } from '../../src/oauth/upstreamAccount.js';
import { microsoft as microsoftCatalogEntry } from '../../src/providers/catalog/microsoft.js';
import { findDefaultConnection } from '../../src/secrets/connectionsRepo.js';
import { findSecrets } from '../../src/secrets/secretsRepo.js';
import { openSecret } from '../../src/secrets/tokenVault.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { URL_CAPS } from '../support/connectFlow.js';
import { secretsBox } from '../support/deadToken.js';
import {
  connectThroughProvider,
  expectNoSecretIn,
  hostMapOf,
  type ConsentAnswer,
} from '../support/emulators/googleMicrosoftShared.js';
import { startMicrosoftEmulator, type EntraUser, type MicrosoftEmulator } from '../support/emulators/microsoft.js';
import { mapHosts } from '../support/hostMap.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { callTool, type WireResponse } from '../support/mcpWire.js';
import { createTestBrowser } from '../support/testBrowser.js';

// Microsoft Entra ID and Graph through the real broker stack, against an
// emulator of their documented wire behaviour on the real hosts
// (test/support/emulators/microsoft.ts): catalog entries as an operator
// writes them, with a tenant other than `common` (a single-tenant app
// registration), and a tool defined with defineConnectionTool.

const TENANT = { id: '72f988bf-86f1-41af-91ab-2d7cd011db47', domain: 'contoso.onmicrosoft.com' };
const APP_ID = '6731de76-14a6-49ae-97bc-6eba6914391e';
const APP_SECRET = 'Kx58Q~canary-client-secret.2Zh';
const user = (login: string, id: string): EntraUser => ({
  userPrincipalName: `${login}@${TENANT.domain}`,
  id,
  displayName: `${login} at Contoso`,
  calendars: [
    { id: `AAMkAG${login}Calendar=`, name: 'Calendar', isDefaultCalendar: true },
    { id: `AAMkAG${login}Holidays=`, name: 'United States holidays', isDefaultCalendar: false },
  ],
});
const USERS = {
  alice: user('alice', '87d349ed-44d7-43e1-9a83-5f2406dee5bd'),
  bob: user('bob', '5bde3e51-d13b-4db1-9948-fe4b109d11a7'),
  mallory: user('mallory', '1fe8d1f2-5b37-4c70-a6d3-1b2a3c4d5e6f'),
  ops: user('ops', 'c6a7b2f0-9d4e-4e8a-8f1b-2c3d4e5f6a7b'),
};
const GRAPH_SCOPES = ['offline_access', 'User.Read', 'Calendars.Read'];

function calendarsTool(name: string, provider: string) {
  return defineConnectionTool({
    name,
    title: 'List my Outlook calendars',
    description: 'Lists your calendars in Microsoft 365.',
    provider,
    scopes: ['Calendars.Read'],
    input: z.strictObject({}),
    annotations: { readOnlyHint: true, openWorldHint: true },
    purpose: () => 'list your Outlook calendars',
    async perform({ fetch }) {
      const response = await fetch('/me/calendars', { headers: { accept: 'application/json' } });
      if (!response.ok) throw new Error(`calendars answered HTTP ${response.status}`);
      const { value } = z.object({ value: z.array(z.object({ name: z.string() })) }).parse(await response.json());
      return { calendars: value.map((calendar) => calendar.name) };
    },
    render: (outcome) =>
      completeResult(`Your calendars: ${(outcome['calendars'] as string[]).join(', ')}.`, {
        calendars: outcome['calendars'],
      }),
  });
}

describe('Microsoft Entra ID / Graph (catalog microsoft, oauth2, a tenant parameter) through its emulator', () => {
  let stack: BrokerStack;
  let entra: MicrosoftEmulator;
  const answers: string[] = [];

  beforeAll(async () => {
    stack = await startBrokerStack({
      retryWaitMs: 200,
      extraTools: [
        calendarsTool('outlook_calendars', 'microsoft'),
        calendarsTool('outlook_calendars_oidc', 'microsoft-oidc'),
      ],
      extraProviders: async ({ brokerUrl, tls }) => {
        const app = {
          clientId: APP_ID,
          clientSecret: APP_SECRET,
          redirectUris: [`${brokerUrl}/oauth/callback/microsoft`, `${brokerUrl}/oauth/callback/microsoft-oidc`],
        };
        entra = await startMicrosoftEmulator({ tls, tenant: TENANT, app, users: Object.values(USERS) });
        return [
          {
            id: 'microsoft',
            catalog: 'microsoft',
            clientId: APP_ID,
            clientSecret: APP_SECRET,
            params: { tenant: TENANT.domain },
            scopes: GRAPH_SCOPES,
          },
          // The same app asked for an ID token as well (openid profile): the tenant named by its id.
          {
            id: 'microsoft-oidc',
            catalog: 'microsoft',
            clientId: APP_ID,
            clientSecret: APP_SECRET,
            params: { tenant: TENANT.id },
            scopes: ['openid', 'profile', ...GRAPH_SCOPES],
          },
        ];
      },
      brokerFetch: (fetch) => mapHosts(fetch, hostMapOf(entra)),
    });
  });
  afterEach(async () => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
    expect(entra.failures).toEqual([]);
    expectNoSecretIn(stack, entra.secrets(), answers);
    await stack.db.pool.query('DELETE FROM secrets');
  });
  afterAll(async () => {
    await stack?.close();
    await entra?.close();
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const kept = (response: WireResponse) => {
    answers.push(response.text);
    return response;
  };
  const graphCalls = (path: string) => entra.seen.filter((s) => s.host === 'graph.microsoft.com' && s.path === path);
  const tokenRequests = (grantType: string) =>
    entra.seen.filter(
      (s) =>
        s.host === 'login.microsoftonline.com' &&
        s.path.endsWith('/oauth2/v2.0/token') &&
        s.form.get('grant_type') === grantType,
    );

  const connect = (login: keyof typeof USERS, tool = 'outlook_calendars', answer: ConsentAnswer = {}, retry = true) =>
    connectThroughProvider(
      stack,
      entra,
      { login, account: USERS[login].userPrincipalName, tool, answer, retry },
      answers,
    );

  it("asks to connect, sends the user to the tenant's authorize endpoint, learns the account from Graph /me, and the retried call lists the calendars once", async () => {
    const before = { me: graphCalls('/v1.0/me').length, calendars: graphCalls('/v1.0/me/calendars').length };
    const { elicited, trip, flowId, statusAfterCallback, retried } = await connect('alice');
    expect(elicited.message).toContain('login.microsoftonline.com');

    // The tenant of the entry in the path, never `common`; v2 scopes, space-separated; PKCE; no nonce and no RFC 8707 resource.
    expect(`${trip.authorizeUrl.origin}${trip.authorizeUrl.pathname}`).toBe(
      `https://login.microsoftonline.com/${TENANT.domain}/oauth2/v2.0/authorize`,
    );
    const sent = Object.fromEntries(trip.authorizeUrl.searchParams);
    expect(sent).toMatchObject({
      client_id: APP_ID,
      response_type: 'code',
      scope: 'offline_access User.Read Calendars.Read',
      code_challenge_method: 'S256',
      redirect_uri: `${stack.brokerUrl}/oauth/callback/microsoft`,
    });
    expect(sent).not.toHaveProperty('resource');
    expect(sent).not.toHaveProperty('nonce');
    expect(trip.done.text).toContain('Microsoft Entra ID / Graph is connected');
    expect(statusAfterCallback).toBe('REQUIREMENT_VERIFIED');

    // The code redeemed at the same tenant's token endpoint, the secret in the body (client_secret_post), no resource.
    const exchange = tokenRequests('authorization_code').at(-1)!;
    expect(exchange.path).toBe(`/${TENANT.domain}/oauth2/v2.0/token`);
    expect(exchange.headers.authorization).toBeUndefined();
    expect(Object.fromEntries(exchange.form)).toMatchObject({
      client_id: APP_ID,
      client_secret: APP_SECRET,
      grant_type: 'authorization_code',
      redirect_uri: sent['redirect_uri'],
    });
    expect(exchange.form.has('resource')).toBe(false);
    expect(entra.tokenAnswers.at(-1)).toMatchObject({ tenant: TENANT.domain, refreshToken: true, idToken: false });

    // Graph /me once with the new token (the identity call), then the calendars once, on the retry.
    const issued = entra.grants.valuesOf(USERS.alice.userPrincipalName, 'access_token');
    const me = graphCalls('/v1.0/me').slice(before.me);
    expect(me.map((c) => c.headers.authorization)).toEqual([`Bearer ${issued.at(-1)}`]);
    expect(retried!.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { calendars: ['Calendar', 'United States holidays'] },
    });
    const calls = graphCalls('/v1.0/me/calendars').slice(before.calendars);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.headers.authorization).toBe(`Bearer ${issued.at(-1)}`);
    expect(calls[0]!.headers['user-agent']).toBe(API_USER_AGENT);
    for (const [name, value] of Object.entries(microsoftCatalogEntry.apiHeaders ?? {}))
      expect(calls[0]!.headers[name.toLowerCase()]).toBe(value);
    expect(
      await query('SELECT lineage, outcome_status FROM operation_receipts WHERE navigation_id = $1', [flowId]),
    ).toEqual([{ lineage: 'mrtr', outcome_status: 'succeeded' }]);

    expect(
      await query(
        "SELECT upstream_subject, upstream_name, granted_scopes, metadata, api_base, navigation_id FROM connections WHERE subject_sub = 'alice' AND provider = 'microsoft'",
      ),
    ).toEqual([
      {
        upstream_subject: USERS.alice.id,
        upstream_name: USERS.alice.userPrincipalName,
        granted_scopes: GRAPH_SCOPES,
        metadata: {},
        api_base: null,
        navigation_id: flowId,
      },
    ]);
    expect(
      (
        await query("SELECT kind FROM secrets WHERE subject_sub = 'alice' AND provider = 'microsoft' ORDER BY kind")
      ).map((s) => s.kind),
    ).toEqual(['access_token', 'refresh_token']);
  });

  it('forgets the connection when Graph answers 401 InvalidAuthenticationToken, and asks to connect again', async () => {
    const { mcp, flowId, retried } = await connect('bob');
    expect(retried!.json.result).toMatchObject({ resultType: 'complete' });
    entra.revokeAccessTokens(USERS.bob.userPrincipalName);
    const before = graphCalls('/v1.0/me/calendars').length;

    const refused = kept(await callTool(stack, mcp, 'outlook_calendars', {}, {}, URL_CAPS));
    expect(graphCalls('/v1.0/me/calendars')).toHaveLength(before + 1);
    expect(refused.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { method: 'elicitation/create', params: { mode: 'url' } } },
    });
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'bob' AND provider = 'microsoft'")).toEqual([]);
    expect(
      await query(
        "SELECT actor, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_forgotten'",
        [flowId],
      ),
    ).toEqual([{ actor: 'provider:microsoft', evidence: { provider: 'microsoft', reason: 'upstream_401' } }]);
  });

  it("refreshes an expired token at the tenant's endpoint and keeps the new refresh token Entra rotates in", async () => {
    entra.grants.accessTokenLifetimeSeconds = 20; // inside the broker's 30 s refresh margin: every use refreshes
    try {
      const { mcp, retried } = await connect('mallory');
      expect(retried!.json.result).toMatchObject({ resultType: 'complete' });
      expect(kept(await callTool(stack, mcp, 'outlook_calendars', {}, {}, URL_CAPS)).json.result).toMatchObject({
        resultType: 'complete',
      });
    } finally {
      entra.grants.accessTokenLifetimeSeconds = 3599;
    }
    const refreshTokens = entra.grants.valuesOf(USERS.mallory.userPrincipalName, 'refresh_token');
    expect(refreshTokens).toHaveLength(3);
    const refreshes = tokenRequests('refresh_token').slice(-2);
    // Each refresh presents the newest refresh token: the one of the consent, then the one the first refresh returned.
    expect(refreshes.map((r) => r.form.get('refresh_token'))).toEqual(refreshTokens.slice(0, 2));
    expect(refreshes.map((r) => r.path)).toEqual([
      `/${TENANT.domain}/oauth2/v2.0/token`,
      `/${TENANT.domain}/oauth2/v2.0/token`,
    ]);
    expect(refreshes.every((r) => r.form.get('client_secret') === APP_SECRET && !r.form.has('resource'))).toBe(true);
    const issued = entra.grants.valuesOf(USERS.mallory.userPrincipalName, 'access_token');
    expect(
      graphCalls('/v1.0/me/calendars')
        .slice(-2)
        .map((c) => c.headers.authorization),
    ).toEqual([`Bearer ${issued[1]}`, `Bearer ${issued[2]}`]);
    const stored = (
      await findSecrets(
        stack.db.pool,
        (await findDefaultConnection(stack.db.pool, { iss: stack.dev.idp.issuer, sub: 'mallory' }, 'microsoft'))!.id,
      )
    ).find((s) => s.kind === 'refresh_token');
    expect(openSecret(secretsBox(stack), stored!)).toBe(refreshTokens[2]);
  });

  it('connects an entry that also asks for openid: the ID token Entra adds, issued by the tenant, does not stop the connection', async () => {
    const { trip, flowId, statusAfterCallback, retried } = await connect('ops', 'outlook_calendars_oidc');
    expect(trip.authorizeUrl.pathname).toBe(`/${TENANT.id}/oauth2/v2.0/authorize`);
    expect(trip.authorizeUrl.searchParams.get('scope')).toBe('openid profile offline_access User.Read Calendars.Read');
    expect(entra.tokenAnswers.filter((a) => a.user === USERS.ops.userPrincipalName)).toMatchObject([
      { grantType: 'authorization_code', tenant: TENANT.id, idToken: true },
    ]);
    expect(statusAfterCallback).toBe('REQUIREMENT_VERIFIED');
    expect(retried!.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { calendars: ['Calendar', 'United States holidays'] },
    });
    // The account is still Graph's (the entry's identity call): the object id, not the ID token's pairwise sub.
    expect(
      await query(
        "SELECT upstream_subject, upstream_name, navigation_id FROM connections WHERE subject_sub = 'ops' AND provider = 'microsoft-oidc'",
      ),
    ).toEqual([{ upstream_subject: USERS.ops.id, upstream_name: USERS.ops.userPrincipalName, navigation_id: flowId }]);
  });

  it('refuses to connect when the user cancels at Entra (error=access_denied), redeeming and storing nothing', async () => {
    const exchanges = tokenRequests('authorization_code').length;
    const { trip, flowId, statusAfterCallback } = await connect(
      'alice',
      'outlook_calendars',
      { decision: 'Deny' },
      false,
    );
    expect(trip.done.status).toBe(400);
    expect(trip.done.text).toContain('did not grant access (access_denied)');
    expect(tokenRequests('authorization_code')).toHaveLength(exchanges);
    expect(statusAfterCallback).toBe('OUT_OF_BAND_PENDING');
    expect(
      (
        await query("SELECT evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'provider_refused'", [
          flowId,
        ])
      )[0]?.evidence,
    ).toEqual({ error: 'access_denied' });
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'alice'")).toEqual([]);
  });

  it('the emulator: refuses the RFC 8707 resource parameter (AADSTS9010010), /common for a single-tenant app, and a tenant it does not know', async () => {
    const fetch = mapHosts(stack.fetch, hostMapOf(entra));
    const redirectUri = `${stack.brokerUrl}/oauth/callback/microsoft`;
    const browser = createTestBrowser({ fetch, stopAt: (u) => u.href.startsWith(redirectUri) });
    const authorize = (tenant: string, extra: Record<string, string> = {}) => {
      const url = new URL(`https://login.microsoftonline.com/${tenant}/oauth2/v2.0/authorize`);
      url.search = new URLSearchParams({
        client_id: APP_ID,
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: 'offline_access User.Read',
        state: 's-1',
        ...extra,
      }).toString();
      return browser.get(url.href);
    };
    const redeem = async (tenant: string, form: Record<string, string>) => {
      const response = await fetch(`https://login.microsoftonline.com/${tenant}/oauth2/v2.0/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          client_id: APP_ID,
          client_secret: APP_SECRET,
          redirect_uri: redirectUri,
          ...form,
        }).toString(),
      });
      return {
        status: response.status,
        body: (await response.json()) as { error: string; error_description: string; error_codes?: number[] },
      };
    };

    const withResource = new URL(
      (await authorize(TENANT.domain, { resource: 'https://graph.microsoft.com' })).location!,
    );
    expect(Object.fromEntries(withResource.searchParams)).toMatchObject({ error: 'invalid_target', state: 's-1' });
    expect(withResource.searchParams.get('error_description')).toMatch(/^AADSTS9010010: /);
    const common = await authorize('common');
    expect(common.status).toBe(400);
    expect(common.text).toContain('AADSTS50194');

    const page = await authorize(TENANT.domain);
    const code = new URL(
      (await browser.submitForm(page, { login: USERS.alice.userPrincipalName }, { button: 'Allow' })).location!,
    ).searchParams.get('code')!;
    expect(
      await redeem(TENANT.domain, { grant_type: 'authorization_code', code, resource: 'https://graph.microsoft.com' }),
    ).toMatchObject({ status: 400, body: { error: 'invalid_target', error_codes: [9010010] } });
    expect(await redeem('fabrikam.onmicrosoft.com', { grant_type: 'authorization_code', code })).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', error_codes: [90002] },
    });
    expect(await redeem('common', { grant_type: 'authorization_code', code })).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', error_codes: [50194] },
    });
    const redeemed = await redeem(TENANT.domain, { grant_type: 'authorization_code', code });
    expect(redeemed.status).toBe(200);
    expect(Object.keys(redeemed.body).sort()).toEqual([
      'access_token',
      'expires_in',
      'ext_expires_in',
      'refresh_token',
      'scope',
      'token_type',
    ]);
  });
});
