import type { CallToolResult } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConnectionTool } from '../../src/mcp/defineConnectionTool.js';
import { completeResult } from '../../src/mcp/defineTool.js';
import { providerRefusal } from '../../src/providers/providerRefusal.js';
import { consentAndAuthorize, openConnectLink } from '../support/connectFlow.js';
import { emulatedFlow, type EmulatedFlow } from '../support/emulators/slackNotionShared.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { mcpPost } from '../support/mcpWire.js';
import { plainProviderEntry, startPlainOAuthServer, type PlainOAuthServer } from '../support/plainOAuthServer.js';
import { connectSdkClient, toolCalls, type Sent } from '../support/sdkClient.js';
import type { BrowserResponse } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A connection tool on the plain OAuth 2.0 provider (test/support/plainOAuthServer.ts:
// no `openid`, opaque tokens, client_secret_basic), called with the official SDK
// client at 2026-07-28: an accepted call is performed once however often the host
// retries, and the provider's 401 forgets the connection and asks to connect again.

const TOOL = 'plain_create_item';

const ItemAnswer = z.object({ item: z.object({ id: z.string(), title: z.string() }) });

const plainCreateItem = defineConnectionTool({
  name: TOOL,
  title: 'Create a Plain OAuth item',
  description: 'Creates an item titled `title` in your Plain OAuth account.',
  provider: 'plain',
  scopes: ['profile'],
  input: z.strictObject({ title: z.string().min(1).max(100) }),
  annotations: { openWorldHint: true },
  purpose: (input) => `create the item \u201c${input.title}\u201d`,
  async perform({ input, fetch, idempotencyKey }) {
    // A 401 never gets here: the bound fetch throws UpstreamUnauthorizedError for it.
    const response = await fetch('/items', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify({ title: input.title }),
    });
    const json: unknown = await response.json().catch(() => undefined);
    if (response.status !== 201) throw providerRefusal('Plain OAuth', response.status, json, 'create the item');
    return { status: 'created', item: ItemAnswer.parse(json).item };
  },
  render: (outcome) => completeResult('Created the item.', outcome),
});

type Login = 'alice' | 'bob';
type Receipt = { id: string; navigation_id: string; lineage: string; outcome_status: string; status: string };

const itemOf = (result: CallToolResult | Record<string, unknown> | undefined) =>
  (result?.['structuredContent'] as { item?: { id: string; title: string } } | undefined)?.item;

describe('a connection tool on the plain OAuth 2.0 provider, through the official SDK client', () => {
  let plain: PlainOAuthServer;
  let emulated: EmulatedFlow;
  const { stack, tokens } = useBrokerStack(
    {
      retryWaitMs: 300,
      extraTools: [plainCreateItem],
      extraProviders: async ({ brokerUrl, tls }) => {
        plain = await startPlainOAuthServer({ tls, redirectUri: `${brokerUrl}/oauth/callback/plain` });
        return [plainProviderEntry(plain)];
      },
    },
    { users: ['alice', 'bob'] },
  );
  beforeAll(() => {
    // The reads of the broker's database and the leak check, shared with the emulated providers' tests.
    emulated = emulatedFlow(stack, 'plain', stack.fetch);
  });
  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });
  afterAll(async () => {
    await plain?.close();
  });

  const receiptsOf = async (login: Login) =>
    (await emulated.query(
      "SELECT r.id, r.navigation_id, r.lineage, r.outcome_status, n.status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.provider = 'plain' AND n.subject_sub = $1 ORDER BY r.created_at",
      [login],
    )) as Receipt[];

  /**
   * One tools/call of plain_create_item at 2026-07-28. A URL elicitation is declined, or accepted
   * with the link opened at once in a browser where `login` signs in, consents, and allows at the
   * plain server while the SDK retries on its own.
   */
  async function createItem(login: Login, title: string, ask: 'connect' | 'decline') {
    let browser: Promise<BrowserResponse> | undefined;
    const sdk = await connectSdkClient(stack, tokens[login], {
      era: '2026-07-28',
      maxRounds: 50,
      url: (params) => {
        if (ask === 'decline') return { action: 'decline' };
        browser = openConnectLink(stack, params.url, login).then((run) => consentAndAuthorize(stack, run, login));
        return { action: 'accept' };
      },
    });
    try {
      const result = await sdk.client.callTool({ name: TOOL, arguments: { title } });
      const done = await browser;
      emulated.keep({ text: JSON.stringify([result, sdk.sent]) + (done?.text ?? '') });
      expect(sdk.errors, 'the SDK reported no protocol errors').toEqual([]);
      return { result, done, sdk, legs: toolCalls(sdk.sent) as Sent[] };
    } finally {
      await sdk.client.close();
    }
  }

  it('performs an accepted call once: one POST at the provider with the receipt as its Idempotency-Key, one acceptance in the ledger, retries answered from the receipt', async () => {
    const { result, done, sdk, legs } = await createItem('alice', 'Once only', 'connect');
    expect(done?.text).toContain('Plain OAuth is connected');
    expect(sdk.urlAsks).toHaveLength(1);
    expect(sdk.urlAsks[0]!.message).toContain('create the item \u201cOnce only\u201d');
    expect(new URL(sdk.urlAsks[0]!.url).origin).toBe(stack.brokerUrl);
    expect(result.isError ?? false).toBe(false);
    expect(result.structuredContent).toMatchObject({ status: 'created', item: { title: 'Once only' } });
    const item = itemOf(result)!;

    // At the provider: one call, one item, alice's.
    expect(plain.items).toEqual([{ id: item.id, title: 'Once only', owner: 'plain-alice' }]);
    const [receipt, ...more] = await receiptsOf('alice');
    expect(more).toEqual([]);
    expect(receipt).toMatchObject({ lineage: 'mrtr', outcome_status: 'succeeded', status: 'MRTR_RETRY_ACCEPTED' });
    expect(plain.itemCalls).toEqual([{ idempotencyKey: receipt!.id, status: 201 }]);
    expect(
      await emulated.query(
        "SELECT event, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'mrtr_accept'",
        [receipt!.navigation_id],
      ),
    ).toEqual([{ event: 'mrtr_accept', evidence: { receiptId: receipt!.id, lineage: 'mrtr' } }]);

    // The host sends the accepting retry and the last one again: the same item, from the receipt.
    const accepting = legs.find((leg) => (leg.body?.['params'] as Record<string, unknown>)['inputResponses']);
    for (const [i, leg] of [accepting!, legs.at(-1)!].entries()) {
      const again = await mcpPost(stack, { ...leg.body, id: `replay-${i}` }, { token: tokens.alice });
      emulated.keep(again);
      expect(again.json.result).toMatchObject({ resultType: 'complete', structuredContent: { item } });
    }
    expect(plain.itemCalls).toHaveLength(1);
    expect(plain.items).toHaveLength(1);
    expect(await receiptsOf('alice')).toEqual([receipt]);

    // Neither the host nor the logs saw a token the plain server issued to alice.
    expect(plain.tokensOf('alice').length).toBeGreaterThanOrEqual(1);
    emulated.expectNoneShown([...plain.tokensOf('alice'), plain.clientSecret]);
  });

  it("forgets bob's connection when the provider answers 401, records it, and the next call asks him to connect again", async () => {
    await createItem('bob', 'Before revoke', 'connect');
    const [connected] = await receiptsOf('bob');
    expect(await emulated.secretsOf('bob')).toContain('access_token');
    const revokedTokens = plain.tokensOf('bob');
    plain.revokeTokensOf('bob');
    const calls = plain.itemCalls.length;

    // Connected: the call goes to the provider at once, is refused, and becomes a URL elicitation (declined here).
    const refused = await createItem('bob', 'After revoke', 'decline');
    expect(plain.itemCalls.slice(calls)).toEqual([{ idempotencyKey: expect.any(String), status: 401 }]);
    expect(refused.sdk.urlAsks).toHaveLength(1);
    expect(refused.legs[0]!.response?.['result']).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { method: 'elicitation/create', params: { mode: 'url' } } },
    });
    expect(refused.result.structuredContent).toEqual({ status: 'declined' });
    expect(await emulated.secretsOf('bob')).toEqual([]);
    expect(await emulated.forgottenOn(connected!.navigation_id)).toEqual([
      { actor: 'provider:plain', evidence: { provider: 'plain', reason: 'upstream_401' } },
    ]);
    // Refused before any acceptance: no receipt, so nothing is left to re-drive with a new token.
    expect(await receiptsOf('bob')).toEqual([connected]);

    // The next call asks to connect again without calling the provider; once connected, it is done once.
    const again = await createItem('bob', 'After revoke', 'connect');
    expect(again.sdk.urlAsks).toHaveLength(1);
    expect(again.done?.text).toContain('Plain OAuth is connected');
    expect(again.result.structuredContent).toMatchObject({ status: 'created', item: { title: 'After revoke' } });
    const [, reconnected, ...more] = await receiptsOf('bob');
    expect(more).toEqual([]);
    expect(plain.itemCalls.slice(calls)).toEqual([
      { idempotencyKey: expect.any(String), status: 401 },
      { idempotencyKey: reconnected!.id, status: 201 },
    ]);
    expect(plain.items.filter((i) => i.title === 'After revoke')).toEqual([
      { id: itemOf(again.result)!.id, title: 'After revoke', owner: 'plain-bob' },
    ]);
    expect(plain.tokensOf('bob').length).toBeGreaterThan(revokedTokens.length);
    emulated.expectNoneShown([...plain.tokensOf('bob'), plain.clientSecret]);
  });
});
