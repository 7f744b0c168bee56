import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { UnavailableError } from '../../src/errors/appError.js';
import { connectionFetch } from '../../src/mcp/connectionFetch.js';
import { defineConnectionTool } from '../../src/mcp/defineConnectionTool.js';
import { completeResult } from '../../src/mcp/defineTool.js';
import { slack as slackCatalogEntry } from '../../src/providers/catalog/slack.js';
import { UpstreamUnauthorizedError } from '../../src/broker/forgetConnection.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { elicitConnection, retryConnection, URL_CAPS } from '../support/connectFlow.js';
import { startSlackEmulator, type SlackEmulator } from '../support/emulators/slack.js';
import { basicCredentials, emulatedFlow, type EmulatedFlow } from '../support/emulators/slackNotionShared.js';
import { mapHosts } from '../support/hostMap.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { callTool, tokenFor } from '../support/mcpWire.js';
import type { BrowserResponse, TestBrowser } from '../support/testBrowser.js';

// Slack through the catalog entry, end to end against an emulator of Slack's
// documented wire (test/support/emulators/slack.ts) standing in for slack.com:
// the broker and the browser both reach it under Slack's real host.

// Slack answers a dead token with HTTP 200 and `ok: false` (Web API, "Errors"): the catalog
// entry declares those answers (deadTokenAnswer), so the bound fetch treats them as a 401 and
// the tool below never sees them.
const SlackAnswer = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    messages: z.object({
      total: z.number(),
      matches: z.array(z.object({ text: z.string(), channel: z.object({ name: z.string() }) })),
    }),
  }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);

const slackSearch = defineConnectionTool({
  name: 'slack_search',
  title: 'Search my Slack messages',
  description: 'Searches your Slack messages for `query`.',
  provider: 'slack',
  scopes: ['search:read'],
  input: z.strictObject({ query: z.string().min(1).max(100) }),
  annotations: { readOnlyHint: true, openWorldHint: true },
  purpose: (input) => `search Slack for \u201c${input.query}\u201d`,
  async perform({ input, fetch }) {
    const response = await fetch('/search.messages', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ query: input.query }).toString(),
    });
    const answer = SlackAnswer.parse(await response.json());
    if (!answer.ok) throw new UnavailableError(`Slack refused the search (${answer.error}).`, { expose: true });
    return {
      total: answer.messages.total,
      matches: answer.messages.matches.map((m) => `#${m.channel.name}: ${m.text}`),
    };
  },
  render: (outcome) => completeResult(`Found ${String(outcome['total'])} messages.`, outcome),
});

describe('Slack (catalog entry) against an emulator on slack.com', () => {
  let stack: BrokerStack;
  let slack: SlackEmulator;
  let emulated: EmulatedFlow;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    stack = await startBrokerStack({
      retryWaitMs: 200,
      extraTools: [slackSearch],
      extraProviders: async ({ brokerUrl, tls }) => {
        slack = await startSlackEmulator({ tls, redirectUri: `${brokerUrl}/oauth/callback/slack` });
        // As an operator writes it in PROVIDERS_FILE.
        return [
          {
            id: 'slack',
            catalog: 'slack',
            clientId: slack.clientId,
            clientSecret: slack.clientSecret,
            scopes: ['search:read'],
          },
        ];
      },
      brokerFetch: (fetch) => mapHosts(fetch, { 'slack.com': slack.origin }),
    });
    // The user's browser reaches slack.com through the same map as the broker.
    emulated = emulatedFlow(stack, 'slack', mapHosts(stack.fetch, { 'slack.com': slack.origin }));
    [alice, bob] = await Promise.all([tokenFor(stack, 'alice'), tokenFor(stack, 'bob')]);
  });
  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });
  afterAll(async () => {
    await stack?.close();
    await slack?.close();
  });

  async function approve(browser: TestBrowser, consent: BrowserResponse, login: string): Promise<BrowserResponse> {
    return emulated.keep(await browser.submitForm(consent, { user: login }, { button: 'Allow' }));
  }

  it('connects through slack.com: user_scope, PKCE, HTTP Basic, and the retried call is done once with the user token', async () => {
    const args = { query: 'quarterly' };
    const elicited = await elicitConnection(stack, alice, 'slack_search', args);
    emulated.keep({ text: elicited.message });
    expect(elicited.message).toContain('search Slack for \u201cquarterly\u201d');
    expect(slack.apiCalls).toHaveLength(0);

    const { browser, review, page: consent } = await emulated.toConsent(elicited.url, 'alice');
    expect(review.text).toContain('Continue to https://slack.com');
    // The browser was sent to Slack's real authorize URL (the host map took it to the emulator).
    const authorize = new URL(consent.url);
    expect(`${authorize.origin}${authorize.pathname}`).toBe('https://slack.com/oauth/v2/authorize');
    expect(consent.text).toContain('As you: search:read');
    const sent = Object.fromEntries(authorize.searchParams);
    expect(sent).toMatchObject({
      client_id: slack.clientId,
      user_scope: 'search:read',
      response_type: 'code',
      code_challenge_method: 'S256',
      redirect_uri: `${stack.brokerUrl}/oauth/callback/slack`,
    });
    expect(sent).not.toHaveProperty('scope');
    expect(sent).not.toHaveProperty('nonce');
    expect(sent['state']).toMatch(/^[\w-]{20,}$/);

    const done = await approve(browser, consent, 'alice');
    expect(done.redirects.map((u) => new URL(u).host)).toContain('slack.com');
    expect(new URL(done.redirects.at(-1)!).pathname).toBe('/oauth/callback/slack');
    expect(done.text).toContain('Slack is connected');
    const flow = await emulated.flowOf('search Slack for \u201cquarterly\u201d');
    expect(flow.status).toBe('REQUIREMENT_VERIFIED');

    // oauth.v2.access: HTTP Basic (the method page's preference), the PKCE verifier, the same redirect_uri.
    expect(slack.tokenRequests).toHaveLength(1);
    const exchange = slack.tokenRequests[0]!;
    // RFC 6749 §2.3.1: each credential form-urlencoded, then Basic (openid-client encodes the '.' of Slack's client id too).
    expect(basicCredentials(exchange.headers)).toEqual({ id: slack.clientId, secret: slack.clientSecret });
    const form = new URLSearchParams(exchange.body);
    expect(exchange.contentType).toBe('application/x-www-form-urlencoded');
    expect(form.has('client_secret')).toBe(false);
    expect(form.get('code_verifier')).toMatch(/^[\w-]{43,128}$/);
    expect(form.get('redirect_uri')).toBe(`${stack.brokerUrl}/oauth/callback/slack`);

    const accepted = await retryConnection(stack, alice, 'slack_search', args, elicited.requestState, 'accept');
    emulated.keep(accepted);
    expect(accepted.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: {
        total: 2,
        matches: ['#general: The quarterly report is in #general', '#random: Quarterly numbers look good'],
      },
    });
    expect((await emulated.flowOf('search Slack for \u201cquarterly\u201d')).status).toBe('MRTR_RETRY_ACCEPTED');
    // Exactly one business call (no identity call: Slack's account is in the token answer), with the user's token.
    const [token] = slack.tokensOf('alice');
    expect(slack.apiCalls.map((c) => `${c.method} ${c.host}${c.path}`)).toEqual(['POST slack.com/api/search.messages']);
    expect(slack.apiCalls[0]!.headers).toMatchObject({
      authorization: `Bearer ${token!.user}`,
      'user-agent': 'connect-broker',
    });
    expect(token!.bot).toBeUndefined();
    const again = await retryConnection(stack, alice, 'slack_search', args, elicited.requestState, 'accept');
    expect(again.json.result?.['structuredContent']).toEqual(accepted.json.result?.['structuredContent']);
    expect(slack.apiCalls).toHaveLength(1);

    // The account, grant and facts Slack's answer gave: authed_user.id, its comma-separated scope, the team.
    expect(
      await emulated.query(
        "SELECT upstream_subject, upstream_name, granted_scopes, metadata, api_base, navigation_id FROM connections WHERE subject_sub = 'alice' AND provider = 'slack'",
      ),
    ).toEqual([
      {
        upstream_subject: 'U0EMUALICE',
        upstream_name: null,
        granted_scopes: ['search:read'],
        metadata: {
          'team.id': slack.team.id,
          'team.name': slack.team.name,
          app_id: slack.appId,
          'authed_user.id': 'U0EMUALICE',
          is_enterprise_install: 'false',
        },
        api_base: null,
        navigation_id: flow.id,
      },
    ]);
    // Slack issues no refresh token without token rotation: only the access token is kept.
    expect(await emulated.secretsOf('alice')).toEqual(['access_token']);
  });

  it('keeps only the user token when Slack also issues a bot token (bot scopes asked beside user_scope)', async () => {
    const args = { query: 'lunch' };
    const elicited = await elicitConnection(stack, bob, 'slack_search', args);
    const { browser, page: stopped } = await emulated.toConsent(elicited.url, 'bob', (u) => u.host === 'slack.com');
    // As an install link that also asks bot scopes: Slack then puts a bot token at the top level.
    const authorize = new URL(stopped.location!);
    authorize.searchParams.set('scope', 'commands');
    const consent = emulated.keep(await browser.get(authorize.href, { stopAt: () => false }));
    expect(consent.text).toContain('As the app: commands');
    const done = await approve(browser, consent, 'bob');
    expect(done.text).toContain('Slack is connected');
    const [token] = slack.tokensOf('bob');
    expect(token!.bot).toMatch(/^xoxb-canary/);

    const accepted = await retryConnection(stack, bob, 'slack_search', args, elicited.requestState, 'accept');
    emulated.keep(accepted);
    expect(accepted.json.result).toMatchObject({ resultType: 'complete', structuredContent: { total: 1 } });
    // The call went with the user's token: Slack refuses bot tokens on search.messages.
    expect(slack.apiCalls.at(-1)!.headers.authorization).toBe(`Bearer ${token!.user}`);
    expect(
      await emulated.query(
        "SELECT granted_scopes, metadata->>'authed_user.id' AS user_id FROM connections WHERE subject_sub = 'bob' AND provider = 'slack'",
      ),
    ).toEqual([{ granted_scopes: ['search:read'], user_id: 'U0EMUBOB01' }]);
    expect(await emulated.secretsOf('bob')).toEqual(['access_token']);
  });

  it('refuses a code Slack answers with HTTP 200 and ok: false (invalid_code): nothing is stored, the flow waits', async () => {
    await emulated.query("DELETE FROM secrets WHERE subject_sub = 'alice' AND provider = 'slack'");
    const args = { query: 'refused code' };
    const elicited = await elicitConnection(stack, alice, 'slack_search', args);
    const { browser, page: consent } = await emulated.toConsent(elicited.url, 'alice');
    const stopped = emulated.keep(
      await browser.submitForm(
        consent,
        { user: 'alice' },
        { button: 'Allow', stopAt: (u) => u.pathname === '/oauth/callback/slack' },
      ),
    );
    const callback = new URL(stopped.location!);
    callback.searchParams.set('code', `${slack.team.id}.not-a-code-slack-issued`);
    const exchanges = slack.tokenRequests.length;

    const page = emulated.keep(await browser.get(callback.href));
    expect(page.status).toBe(400);
    // Slack's `ok: false, error: invalid_code` reached openid-client as RFC 6749's invalid_grant.
    expect(page.text).toContain('already used or has expired');
    expect(slack.tokenRequests).toHaveLength(exchanges + 1);
    const flow = await emulated.flowOf('refused code');
    expect(flow.status).toBe('OUT_OF_BAND_PENDING');
    const events = await emulated.query(
      'SELECT event, evidence FROM navigation_events WHERE navigation_id = $1 ORDER BY id',
      [flow.id],
    );
    expect(events.at(-1)).toMatchObject({ event: 'callback_failed', evidence: { error: 'invalid_input' } });
    expect(await emulated.secretsOf('alice')).toEqual([]);
  });

  it('comes back with access_denied when the user cancels at Slack, and redeems nothing', async () => {
    const args = { query: 'cancelled' };
    const elicited = await elicitConnection(stack, alice, 'slack_search', args);
    const { browser, page: consent } = await emulated.toConsent(elicited.url, 'alice');
    const exchanges = slack.tokenRequests.length;
    const page = emulated.keep(await browser.submitForm(consent, { user: 'alice' }, { button: 'Cancel' }));
    const callback = new URL(page.url);
    expect(callback.pathname).toBe('/oauth/callback/slack');
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(new URL(consent.url).searchParams.get('state'));
    expect(page.text).toContain('did not grant access (access_denied)');
    expect(slack.tokenRequests).toHaveLength(exchanges);
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

  it("reads Slack's dead-token answer (HTTP 200, ok: false, token_revoked) as the provider refusing the token, as the entry declares; other answers pass unchanged", async () => {
    const [token] = slack.tokensOf('alice');
    const info = {
      provider: 'slack',
      displayName: 'Slack',
      apiBase: 'https://slack.com/api',
      scopes: [],
      apiHeaders: {},
      account: { subject: undefined, name: undefined },
      grantedScopes: [],
      metadata: {},
      deadTokenAnswer: slackCatalogEntry.deadTokenAnswer,
    };
    const fetch = connectionFetch(mapHosts(stack.fetch, { 'slack.com': slack.origin }), info, token!.user);
    const search = () =>
      fetch('/search.messages', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'query=x',
      });
    const live = await search();
    expect(live.status).toBe(200);
    expect(await live.json()).toMatchObject({ ok: true });
    slack.revokeTokensOf('alice');
    await expect(search()).rejects.toBeInstanceOf(UpstreamUnauthorizedError);
    // Without the declaration the same answer reaches the tool as a plain HTTP 200.
    const undeclared = await connectionFetch(
      mapHosts(stack.fetch, { 'slack.com': slack.origin }),
      { ...info, deadTokenAnswer: undefined },
      token!.user,
    )('/search.messages', { method: 'POST', body: 'query=x' });
    expect(await undeclared.json()).toEqual({ ok: false, error: 'token_revoked' });
  });

  it('forgets the connection when Slack answers token_revoked, records it, and asks to connect again', async () => {
    // alice connects afresh (a new token), then Slack revokes it.
    const first = await elicitConnection(stack, alice, 'slack_search', { query: 'before revoke' });
    const { browser, page: consent } = await emulated.toConsent(first.url, 'alice');
    await approve(browser, consent, 'alice');
    const connectedBy = (await emulated.flowOf('before revoke')).id;
    await retryConnection(stack, alice, 'slack_search', { query: 'before revoke' }, first.requestState, 'accept');
    expect(await emulated.secretsOf('alice')).toEqual(['access_token']);
    slack.revokeTokensOf('alice');
    const calls = slack.apiCalls.length;

    const asked = await callTool(stack, alice, 'slack_search', { query: 'after revoke' }, {}, URL_CAPS);
    emulated.keep(asked);
    expect(asked.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { method: 'elicitation/create', params: { mode: 'url' } } },
    });
    expect(slack.apiCalls).toHaveLength(calls + 1);
    expect(await emulated.secretsOf('alice')).toEqual([]);
    expect(await emulated.forgottenOn(connectedBy)).toEqual([
      { actor: 'provider:slack', evidence: { provider: 'slack', reason: 'upstream_401' } },
    ]);
    // The record of the account stays (the last one it held); only the tokens are gone.
    expect(
      await emulated.query(
        "SELECT upstream_subject FROM connections WHERE subject_sub = 'alice' AND provider = 'slack'",
      ),
    ).toEqual([{ upstream_subject: 'U0EMUALICE' }]);
  });

  it('shows no token and no client secret in any answer, page or log line', () => {
    expect(slack.issued()).toHaveLength(4);
    emulated.expectNoneShown([...slack.issued(), slack.clientSecret]);
  });
});
