import type { CallToolResult } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBrokerStack, type BrokerStack, type BrokerStackOptions } from '../support/brokerStack.js';
import { consentAndAuthorize, GITHUB_FORMS, openConnectLink } from '../support/connectFlow.js';
import { devGithubIssues, devGithubToken } from '../support/devGithubReader.js';
import { closeLegacy, connectLegacy, expectUrlElicitation, internalErrors, until } from '../support/legacySdkClient.js';
import { mcpPost, tokenFor } from '../support/mcpWire.js';
import { connectSdkClient, toolCalls, type Sent } from '../support/sdkClient.js';
import type { BrowserResponse } from '../support/testBrowser.js';

// github_create_issue through the GitHub-like development provider (the `github`
// catalog entry on the emulator, as npm start configures it) with the official
// SDK clients on each lineage: 2026-07-28 MRTR, 2025-11-25 nested elicitation,
// and the 2025-11-25 -32042 retry. The user connects through the provider's own
// sign-in and Authorize pages; however often the host retries, alice/demo ends
// with exactly one issue, counted at the emulator through its own API.

const REPOSITORY = 'alice/demo';
const TOOL = 'github_create_issue';
type Created = { status: string; issue: { number: number; title: string; repository: string } };

const numberOf = (result: CallToolResult | Record<string, unknown> | undefined) =>
  (result?.['structuredContent'] as Created | undefined)?.issue.number;

/** The link in the test browser: sign in at the broker, review, sign in at the GitHub-like provider, Authorize. */
const connectInBrowser = (stack: BrokerStack, url: string) =>
  openConnectLink(stack, url, 'alice').then((run) => consentAndAuthorize(stack, run, 'alice', 'Allow', GITHUB_FORMS));

async function issuesTitled(stack: BrokerStack, title: string) {
  const github = stack.dev.github!;
  const token = await devGithubToken(github, stack.fetch, 'alice');
  return (await devGithubIssues(github, stack.fetch, token, REPOSITORY)).filter((i) => i.title === title);
}

const rows = async (stack: BrokerStack, sql: string, params: unknown[] = []) =>
  (await stack.db.pool.query(sql, params)).rows;
const githubConnection = (stack: BrokerStack) =>
  rows(stack, "SELECT upstream_subject, upstream_name FROM connections WHERE provider = 'github'");
const ALICE_AT_GITHUB = [{ upstream_subject: '9000001', upstream_name: 'alice' }];

function expectDonePage(stack: BrokerStack, done: BrowserResponse): void {
  expect(done.url).toMatch(new RegExp(`^${stack.brokerUrl}/connect/done\\?n=`));
  expect(done.text).toContain('GitHub (development) is connected');
}

/** A stack per describe (its options), alice's MCP token, and no internal error logged by any test. */
function withStack(options: BrokerStackOptions): { stack: BrokerStack; alice: string } {
  const at = {} as { stack: BrokerStack; alice: string };
  beforeAll(async () => {
    at.stack = await startBrokerStack(options);
    at.alice = await tokenFor(at.stack, 'alice');
  });
  afterEach(() => {
    expect(internalErrors(at.stack), 'the broker logged no internal error').toEqual([]);
  });
  afterAll(async () => {
    await at.stack?.close();
  });
  return at;
}

describe('github_create_issue with the official SDK client at 2026-07-28 (MRTR)', () => {
  // A short wait per retry, so the user is still in the browser when the host retries.
  const at = withStack({ retryWaitMs: 300 });

  const resultOf = (leg: Sent | undefined) =>
    leg?.response?.['result'] as
      { resultType?: string; requestState?: string; inputRequests?: Record<string, unknown> } | undefined;
  const isStateOnly = (leg: Sent) =>
    resultOf(leg)?.resultType === 'input_required' && resultOf(leg)?.inputRequests === undefined;

  it('connects through the GitHub-like pages while the SDK retries, and opens one issue however often the host retries', async () => {
    const { stack, alice } = at;
    const args = { repository: REPOSITORY, title: 'MRTR SDK issue', body: 'Opened through the 2026-07-28 retry.' };
    let browser: Promise<BrowserResponse> | undefined;
    const mrtr = await connectSdkClient(stack, alice, {
      era: '2026-07-28',
      url: (params) => {
        // The host accepts at once and opens the link; the user finishes only after the broker
        // has answered one retry with "still waiting", so the SDK has retried on its own.
        browser = until('a state-only input_required', () => mrtr.sent.find(isStateOnly)).then(() =>
          connectInBrowser(stack, params.url),
        );
        return { action: 'accept' };
      },
      maxRounds: 50,
    });
    try {
      const result = await mrtr.client.callTool({ name: TOOL, arguments: args });
      expectDonePage(stack, await browser!);
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({
        status: 'created',
        issue: { repository: REPOSITORY, title: args.title },
      });
      const number = numberOf(result);
      expect(mrtr.urlAsks).toHaveLength(1);
      expect(mrtr.urlAsks[0]).toMatchObject({ mode: 'url', message: expect.stringContaining('GitHub (development)') });
      expect(new URL(mrtr.urlAsks[0]!.url).origin).toBe(stack.brokerUrl);

      // On the wire: the link; the accepting retry; state-only waits, each retried with the state it
      // got; the issue. Every leg has its own id.
      const legs = toolCalls(mrtr.sent) as Sent[];
      const [first, accepting] = legs;
      const last = legs.at(-1)!;
      expect(legs.length).toBeGreaterThanOrEqual(3);
      expect(resultOf(first)).toMatchObject({
        resultType: 'input_required',
        inputRequests: { connect: { method: 'elicitation/create', params: { mode: 'url' } } },
      });
      expect(accepting?.body?.['params']).toMatchObject({
        arguments: args,
        inputResponses: { connect: { action: 'accept' } },
        requestState: resultOf(first)?.requestState,
      });
      for (const [i, leg] of legs.slice(1).entries())
        expect((leg.body?.['params'] as { requestState?: string }).requestState).toBe(resultOf(legs[i])?.requestState);
      expect(
        legs.slice(2).every((leg) => (leg.body?.['params'] as Record<string, unknown>)['inputResponses'] === undefined),
      ).toBe(true);
      expect(legs.slice(1, -1).every(isStateOnly)).toBe(true);
      expect(resultOf(last)).toMatchObject({
        resultType: 'complete',
        structuredContent: { status: 'created', issue: { number } },
      });
      expect(new Set(legs.map((leg) => leg.body?.['id'])).size).toBe(legs.length);

      // The host sends the accepting retry and the last one again: both are answered from the record.
      for (const [i, leg] of [accepting!, last].entries()) {
        const again = await mcpPost(stack, { ...leg.body, id: `replay-${i}` }, { token: alice });
        expect(again.json.result).toMatchObject({
          resultType: 'complete',
          structuredContent: { status: 'created', issue: { number } },
        });
      }

      expect(
        await rows(stack, "SELECT status, lineage FROM elicitation_navigations WHERE provider = 'github'"),
      ).toEqual([{ status: 'MRTR_RETRY_ACCEPTED', lineage: 'mrtr' }]);
      expect(await rows(stack, 'SELECT lineage, outcome_status FROM operation_receipts')).toEqual([
        { lineage: 'mrtr', outcome_status: 'succeeded' },
      ]);
      expect(await githubConnection(stack)).toEqual(ALICE_AT_GITHUB);
      expect(await issuesTitled(stack, args.title)).toEqual([
        expect.objectContaining({ number, user: expect.objectContaining({ login: 'alice' }) }),
      ]);
      expect(mrtr.errors, 'the SDK reported no protocol errors').toEqual([]);
    } finally {
      await mrtr.client.close();
    }
  });
});

describe('github_create_issue with the official SDK client at 2025-11-25, nested lineage', () => {
  const at = withStack({ legacyWaitMs: 15_000 });

  it('opens one issue through the nested elicitation, with the call sent again while it waits and once more after it', async () => {
    const { stack, alice } = at;
    const args = { repository: REPOSITORY, title: 'Nested SDK issue', body: 'Opened on the call that asked.' };
    let browser: Promise<BrowserResponse> | undefined;
    let retrying: Promise<CallToolResult> | undefined;
    const legacy = await connectLegacy(stack, alice, {
      url: (params) => {
        // The host accepts and opens the link; impatient, it also sends the same call again.
        retrying = legacy.client.callTool({ name: TOOL, arguments: args }) as Promise<CallToolResult>;
        browser = connectInBrowser(stack, params.url);
        return { action: 'accept' };
      },
    });
    try {
      const result = await legacy.client.callTool({ name: TOOL, arguments: args });
      expectDonePage(stack, await browser!);
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({
        status: 'created',
        issue: { repository: REPOSITORY, title: args.title },
      });
      const number = numberOf(result);
      expect(numberOf(await retrying!)).toBe(number);
      const again = await legacy.client.callTool({ name: TOOL, arguments: args });
      expect(numberOf(again)).toBe(number);

      expect(legacy.urlAsks).toHaveLength(1);
      const ask = legacy.urlAsks[0]!;
      expect(ask).toMatchObject({
        mode: 'url',
        elicitationId: expect.any(String),
        message: expect.stringContaining('GitHub (development)'),
      });
      expect(legacy.completed).toEqual([ask.elicitationId]);
      const calls = toolCalls(legacy.sent);
      expect(calls).toHaveLength(3);
      expect(
        await rows(stack, 'SELECT status, lineage FROM elicitation_navigations WHERE id = $1', [ask.elicitationId]),
      ).toEqual([{ status: 'ORIGINAL_RESPONSE_ACCEPTED', lineage: 'nested' }]);
      expect(
        await rows(stack, 'SELECT navigation_id, lineage, jsonrpc_id, outcome_status FROM operation_receipts'),
      ).toEqual([
        {
          navigation_id: ask.elicitationId,
          lineage: 'nested',
          jsonrpc_id: String(calls[0]!.body!['id']),
          outcome_status: 'succeeded',
        },
      ]);
      expect(await githubConnection(stack)).toEqual(ALICE_AT_GITHUB);
      expect(await issuesTitled(stack, args.title)).toEqual([expect.objectContaining({ number })]);
      expect(legacy.errors).toEqual([]);
    } finally {
      await closeLegacy(legacy);
    }
  });
});

describe('github_create_issue with the official SDK client at 2025-11-25, -32042 lineage', () => {
  const at = withStack({ legacyUrlElicitation: 'error', legacyWaitMs: 2_000, retryWaitMs: 300 });

  it('answers an early retry with the same link, opens one issue on the retry after the browser, and answers a third call from the record', async () => {
    const { stack, alice } = at;
    const args = { repository: REPOSITORY, title: 'Legacy -32042 SDK issue', body: 'Opened on the retry.' };
    const legacy = await connectLegacy(stack, alice, {});
    try {
      const failure = await expectUrlElicitation(legacy, TOOL, args);
      const [elicitation, ...others] = failure.elicitations;
      expect(others).toEqual([]);
      expect(elicitation).toMatchObject({
        mode: 'url',
        elicitationId: expect.any(String),
        message: expect.stringContaining('GitHub (development)'),
      });
      const { elicitationId, url } = elicitation!;
      expect(new URL(url).origin).toBe(stack.brokerUrl);

      // The host retries before the user has been to the browser: the same flow again, nothing done.
      const early = await expectUrlElicitation(legacy, TOOL, args);
      expect(early.elicitations.map((e) => e.elicitationId)).toEqual([elicitationId]);
      expect(await rows(stack, 'SELECT status, lineage FROM elicitation_navigations')).toEqual([
        { status: 'USER_REVIEW', lineage: 'error_retry' },
      ]);
      expect(await issuesTitled(stack, args.title)).toEqual([]);

      expectDonePage(stack, await connectInBrowser(stack, url));
      await until('notifications/elicitation/complete', () => (legacy.completed.length > 0 ? true : undefined));
      expect(legacy.completed).toEqual([elicitationId]);

      const retried = await legacy.client.callTool({ name: TOOL, arguments: args });
      expect(retried.isError ?? false).toBe(false);
      expect(retried.structuredContent).toMatchObject({
        status: 'created',
        issue: { repository: REPOSITORY, title: args.title },
      });
      const number = numberOf(retried);
      const again = await legacy.client.callTool({ name: TOOL, arguments: args });
      expect(numberOf(again)).toBe(number);

      expect(toolCalls(legacy.sent)).toHaveLength(4);
      expect(await rows(stack, 'SELECT status FROM elicitation_navigations WHERE id = $1', [elicitationId])).toEqual([
        { status: 'RETRY_RESPONSE_ACCEPTED' },
      ]);
      expect(await rows(stack, 'SELECT lineage, jsonrpc_id, outcome_status FROM operation_receipts')).toEqual([
        { lineage: 'error_retry', jsonrpc_id: null, outcome_status: 'succeeded' },
      ]);
      expect(await githubConnection(stack)).toEqual(ALICE_AT_GITHUB);
      expect(await issuesTitled(stack, args.title)).toEqual([expect.objectContaining({ number })]);
      expect(legacy.completed).toEqual([elicitationId]);
      expect(legacy.errors).toEqual([]);
    } finally {
      await closeLegacy(legacy);
    }
  });
});
