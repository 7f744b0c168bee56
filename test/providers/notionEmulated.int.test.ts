import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectionFetch } from '../../src/mcp/connectionFetch.js';
import { defineConnectionTool } from '../../src/mcp/defineConnectionTool.js';
import { completeResult } from '../../src/mcp/defineTool.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { elicitConnection, retryConnection, URL_CAPS } from '../support/connectFlow.js';
import { startNotionEmulator, type NotionEmulator } from '../support/emulators/notion.js';
import { basicCredentials, emulatedFlow, type EmulatedFlow } from '../support/emulators/slackNotionShared.js';
import { mapHosts } from '../support/hostMap.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { callTool, tokenFor } from '../support/mcpWire.js';
import type { BrowserResponse, TestBrowser } from '../support/testBrowser.js';

// Notion through the catalog entry, end to end against an emulator of Notion's
// documented wire (test/support/emulators/notion.ts) standing in for
// api.notion.com: the broker and the browser both reach it under Notion's real host.

const SearchAnswer = z.object({
  results: z.array(
    z.object({
      id: z.string(),
      properties: z.object({ title: z.object({ title: z.array(z.object({ plain_text: z.string() })) }) }),
    }),
  ),
});

const notionSearch = defineConnectionTool({
  name: 'notion_search',
  title: 'Search my Notion pages',
  description: 'Searches the Notion pages you shared with the broker for `query`.',
  provider: 'notion',
  scopes: [],
  input: z.strictObject({ query: z.string().min(1).max(100) }),
  annotations: { readOnlyHint: true, openWorldHint: true },
  purpose: (input) => `search Notion for \u201c${input.query}\u201d`,
  async perform({ input, fetch }) {
    // A 401 never gets here: the bound fetch throws UpstreamUnauthorizedError for it.
    const response = await fetch('/search', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: input.query, filter: { property: 'object', value: 'page' } }),
    });
    const { results } = SearchAnswer.parse(await response.json());
    return { titles: results.map((page) => page.properties.title.title.map((t) => t.plain_text).join('')) };
  },
  render: (outcome) => completeResult(`Found ${String((outcome['titles'] as unknown[]).length)} pages.`, outcome),
});

describe('Notion (catalog entry) against an emulator on api.notion.com', () => {
  let stack: BrokerStack;
  let notion: NotionEmulator;
  let emulated: EmulatedFlow;
  let alice: string;

  beforeAll(async () => {
    stack = await startBrokerStack({
      retryWaitMs: 200,
      extraTools: [notionSearch],
      extraProviders: async ({ brokerUrl, tls }) => {
        notion = await startNotionEmulator({ tls, redirectUri: `${brokerUrl}/oauth/callback/notion` });
        // As an operator writes it in PROVIDERS_FILE: Notion has no scopes.
        return [
          { id: 'notion', catalog: 'notion', clientId: notion.clientId, clientSecret: notion.clientSecret, scopes: [] },
        ];
      },
      brokerFetch: (fetch) => mapHosts(fetch, { 'api.notion.com': notion.origin }),
    });
    // The user's browser reaches api.notion.com through the same map as the broker.
    emulated = emulatedFlow(stack, 'notion', mapHosts(stack.fetch, { 'api.notion.com': notion.origin }));
    alice = await tokenFor(stack, 'alice');
  });
  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });
  afterAll(async () => {
    await stack?.close();
    await notion?.close();
  });

  async function decide(
    browser: TestBrowser,
    consent: BrowserResponse,
    login: string,
    button: 'Allow' | 'Cancel',
    stopAt?: (u: URL) => boolean,
  ): Promise<BrowserResponse> {
    return emulated.keep(await browser.submitForm(consent, { user: login }, { button, ...(stopAt ? { stopAt } : {}) }));
  }

  it('connects through api.notion.com: owner=user, no PKCE, HTTP Basic, and the retried call is done once with the pinned Notion-Version', async () => {
    const args = { query: 'quarterly' };
    const elicited = await elicitConnection(stack, alice, 'notion_search', args);
    emulated.keep({ text: elicited.message });
    expect(elicited.message).toContain('search Notion for \u201cquarterly\u201d');

    const { browser, review, page: consent } = await emulated.toConsent(elicited.url, 'alice');
    expect(review.text).toContain('Continue to https://api.notion.com');
    const authorize = new URL(consent.url);
    expect(`${authorize.origin}${authorize.pathname}`).toBe('https://api.notion.com/v1/oauth/authorize');
    expect(consent.status).toBe(200);
    const sent = Object.fromEntries(authorize.searchParams);
    expect(sent).toMatchObject({
      client_id: notion.clientId,
      response_type: 'code',
      owner: 'user',
      redirect_uri: `${stack.brokerUrl}/oauth/callback/notion`,
    });
    // No scopes, no PKCE, no nonce: Notion takes none of them.
    for (const absent of ['scope', 'code_challenge', 'code_challenge_method', 'nonce', 'resource'])
      expect(sent).not.toHaveProperty(absent);

    const done = await decide(browser, consent, 'alice', 'Allow');
    expect(new URL(done.redirects.at(-1)!).pathname).toBe('/oauth/callback/notion');
    expect(done.text).toContain('Notion is connected');
    const flow = await emulated.flowOf('search Notion for \u201cquarterly\u201d');
    expect(flow.status).toBe('REQUIREMENT_VERIFIED');

    // POST /v1/oauth/token: HTTP Basic only, no PKCE verifier, the redirect_uri the authorization URL carried.
    expect(notion.tokenRequests).toHaveLength(1);
    const exchange = notion.tokenRequests[0]!;
    expect(basicCredentials(exchange.headers)).toEqual({ id: notion.clientId, secret: notion.clientSecret });
    // Notion's page shows a JSON body; the broker sends RFC 6749 §4.1.3's form, which the emulator takes (see its header).
    expect(exchange.contentType).toBe('application/x-www-form-urlencoded');
    const form = Object.fromEntries(new URLSearchParams(exchange.body));
    expect(form).toMatchObject({
      grant_type: 'authorization_code',
      redirect_uri: `${stack.brokerUrl}/oauth/callback/notion`,
    });
    for (const absent of ['client_secret', 'code_verifier']) expect(form).not.toHaveProperty(absent);

    const accepted = await retryConnection(stack, alice, 'notion_search', args, elicited.requestState, 'accept');
    emulated.keep(accepted);
    expect(accepted.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { titles: ['Quarterly planning', 'Quarterly review notes'] },
    });
    expect((await emulated.flowOf('search Notion for \u201cquarterly\u201d')).status).toBe('MRTR_RETRY_ACCEPTED');
    // Exactly one business call (no identity call: the owner is in the token answer), with the user's token and the catalog's version pin.
    const [token] = notion.tokensOf('alice');
    expect(notion.apiCalls.map((c) => `${c.method} ${c.host}${c.path}`)).toEqual(['POST api.notion.com/v1/search']);
    expect(notion.apiCalls[0]!.headers).toMatchObject({
      authorization: `Bearer ${token!}`,
      'notion-version': '2022-06-28',
      'user-agent': 'connect-broker',
      'content-type': 'application/json',
    });
    const again = await retryConnection(stack, alice, 'notion_search', args, elicited.requestState, 'accept');
    expect(again.json.result?.['structuredContent']).toEqual(accepted.json.result?.['structuredContent']);
    expect(notion.apiCalls).toHaveLength(1);

    // The owner Notion's answer named, no scopes, and the workspace facts beside it.
    const user = notion.users.find((u) => u.login === 'alice')!;
    expect(
      await emulated.query(
        "SELECT upstream_subject, upstream_name, granted_scopes, metadata, api_base, navigation_id FROM connections WHERE subject_sub = 'alice' AND provider = 'notion'",
      ),
    ).toEqual([
      {
        upstream_subject: user.id,
        upstream_name: user.name,
        granted_scopes: [],
        metadata: {
          bot_id: notion.botId,
          workspace_id: notion.workspace.id,
          workspace_name: notion.workspace.name,
          'owner.type': 'user',
          'owner.user.id': user.id,
          'owner.user.name': user.name,
        },
        api_base: null,
        navigation_id: flow.id,
      },
    ]);
    // `refresh_token: null`: no refresh token is stored, and the access token is kept as issued.
    expect(await emulated.secretsOf('alice')).toEqual(['access_token']);
  });

  it('comes back with access_denied when the user cancels at Notion, and redeems nothing', async () => {
    await emulated.query("DELETE FROM secrets WHERE subject_sub = 'alice' AND provider = 'notion'");
    const elicited = await elicitConnection(stack, alice, 'notion_search', { query: 'cancelled' });
    const { browser, page: consent } = await emulated.toConsent(elicited.url, 'alice');
    const exchanges = notion.tokenRequests.length;
    const page = await decide(browser, consent, 'alice', 'Cancel');
    const callback = new URL(page.url);
    expect(callback.pathname).toBe('/oauth/callback/notion');
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(page.text).toContain('did not grant access (access_denied)');
    expect(notion.tokenRequests).toHaveLength(exchanges);
    const flow = await emulated.flowOf('cancelled');
    expect(
      (
        await emulated.query(
          'SELECT event, evidence FROM navigation_events WHERE navigation_id = $1 ORDER BY id DESC LIMIT 1',
          [flow.id],
        )
      )[0],
    ).toMatchObject({ event: 'provider_refused', evidence: { error: 'access_denied' } });
  });

  it('refuses a code Notion answers with its own 400 error (invalid_grant): nothing is stored, the flow waits', async () => {
    const elicited = await elicitConnection(stack, alice, 'notion_search', { query: 'refused code' });
    const { browser, page: consent } = await emulated.toConsent(elicited.url, 'alice');
    const stopped = await decide(browser, consent, 'alice', 'Allow', (u) => u.pathname === '/oauth/callback/notion');
    const callback = new URL(stopped.location!);
    callback.searchParams.set('code', '00000000-0000-4000-8000-000000000000');
    const exchanges = notion.tokenRequests.length;

    const page = emulated.keep(await browser.get(callback.href));
    expect(page.status).toBe(400);
    // `{object: "error", code: "invalid_grant"}` reached openid-client as RFC 6749's invalid_grant.
    expect(page.text).toContain('already used or has expired');
    expect(notion.tokenRequests).toHaveLength(exchanges + 1);
    const flow = await emulated.flowOf('refused code');
    expect(flow.status).toBe('OUT_OF_BAND_PENDING');
    expect(
      (
        await emulated.query(
          'SELECT event, evidence FROM navigation_events WHERE navigation_id = $1 ORDER BY id DESC LIMIT 1',
          [flow.id],
        )
      )[0],
    ).toMatchObject({ event: 'callback_failed', evidence: { error: 'invalid_input' } });
    expect(await emulated.secretsOf('alice')).toEqual([]);
  });

  it('refuses an API call without Notion-Version (what the catalog pin prevents), as Notion documents', async () => {
    const [token] = notion.tokensOf('alice');
    const info = {
      provider: 'notion',
      displayName: 'Notion',
      apiBase: 'https://api.notion.com/v1',
      scopes: [],
      apiHeaders: {},
      account: { subject: undefined, name: undefined },
      grantedScopes: [],
      metadata: {},
    };
    const response = await connectionFetch(
      mapHosts(stack.fetch, { 'api.notion.com': notion.origin }),
      info,
      token!,
    )('/search', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ object: 'error', status: 400, code: 'missing_version' });
  });

  it('forgets the connection when Notion answers 401 unauthorized, records it, and asks to connect again', async () => {
    const first = await elicitConnection(stack, alice, 'notion_search', { query: 'before revoke' });
    const { browser, page: consent } = await emulated.toConsent(first.url, 'alice');
    await decide(browser, consent, 'alice', 'Allow');
    const connectedBy = (await emulated.flowOf('before revoke')).id;
    const before = await retryConnection(
      stack,
      alice,
      'notion_search',
      { query: 'before revoke' },
      first.requestState,
      'accept',
    );
    expect(before.json.result).toMatchObject({ resultType: 'complete' });
    expect(await emulated.secretsOf('alice')).toEqual(['access_token']);
    notion.revokeTokensOf('alice');
    const calls = notion.apiCalls.length;

    const asked = await callTool(stack, alice, 'notion_search', { query: 'after revoke' }, {}, URL_CAPS);
    emulated.keep(asked);
    expect(asked.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { method: 'elicitation/create', params: { mode: 'url' } } },
    });
    expect(notion.apiCalls).toHaveLength(calls + 1);
    expect(await emulated.secretsOf('alice')).toEqual([]);
    expect(await emulated.forgottenOn(connectedBy)).toEqual([
      { actor: 'provider:notion', evidence: { provider: 'notion', reason: 'upstream_401' } },
    ]);
  });

  it('shows no token and no client secret in any answer, page or log line', () => {
    expect(notion.issued()).toHaveLength(2);
    emulated.expectNoneShown([...notion.issued(), notion.clientSecret]);
  });
});
