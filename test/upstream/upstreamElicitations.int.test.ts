import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { randomBytes } from 'node:crypto';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { callTool } from '../support/mcpWire.js';
import { connectSdkClient, toolCalls, type Era, type SdkClient } from '../support/sdkClient.js';
import { startUpstreamMcp, type UpstreamMcp } from '../support/upstreamMcp.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An upstream MCP server that asks the user (MCP 2026-07-28, input_required) through the broker:
// its forms and links are judged first (the form audit, the URL classifier), then asked of the host
// as the broker's own input_required (2026-07-28) or nested on the call's stream (2025-11-25), and the
// answers go back to the upstream with its own requestState. The host is the official SDK client.

let notes: UpstreamMcp;
const CANARY = 'upstream-canary-0c6f2b9e41d7';
const METRICS_TOKEN = randomBytes(32).toString('base64url');

describe('upstream elicitations relayed to the host', () => {
  const { stack, tokens } = useBrokerStack(
    {
      metrics: (pool) => createMetrics({ pool, logger: createLogger({ level: 'silent' }), gateCacheMs: 0 }),
      metricsToken: METRICS_TOKEN,
      extraProviders: async ({ tls }) => {
        const fetch = createFetch({ extraCaPems: [tls.caPem] });
        notes = await startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge', eliciting: true });
        return [
          { id: 'upnotes', kind: 'mcp', url: notes.url, prefix: 'up', registration: 'auto', displayName: 'Up Notes' },
        ];
      },
    },
    { users: ['alice', 'bob', 'mallory'] },
  );
  afterAll(async () => {
    await notes?.close();
  });

  beforeAll(async () => {
    const elicited = await elicitConnection(stack, tokens.alice, 'up_whoami', {});
    const done = await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    expect(done.status).toBe(200);
    await retryConnection(stack, tokens.alice, 'up_whoami', {}, elicited.requestState, 'accept');
  });

  const host = (era: Era, color = 'blue') =>
    connectSdkClient(stack, tokens.alice, {
      era,
      form: () => ({ action: 'accept', content: { color } }),
      url: () => ({ action: 'accept' }),
    });
  const callsOf = (tool: string) => notes.calls.filter((c) => c.tool === tool).length;
  async function using<T>(sdk: SdkClient, run: (sdk: SdkClient) => Promise<T>): Promise<T> {
    try {
      return await run(sdk);
    } finally {
      await sdk.client.close();
    }
  }
  const textOf = (result: { content?: unknown }) => (result.content as { text: string }[] | undefined)?.[0]?.text ?? '';

  it('2026-07-28 host: the upstream form reaches the host, its answer and requestState reach the upstream, one upstream call per host request', async () => {
    const before = callsOf('ask_color');
    await using(await host('2026-07-28'), async (sdk) => {
      const result = await sdk.client.callTool({ name: 'up_ask_color', arguments: {} });
      expect(result.isError).not.toBe(true);
      expect(textOf(result)).toBe('Colour: blue');
      expect(sdk.formAsks).toHaveLength(1);
      expect(sdk.formAsks[0]!.message).toContain('Which colour?');
      expect(sdk.formAsks[0]!.requestedSchema).toEqual({ type: 'object', properties: { color: { type: 'string' } } });
      // Two host requests (the call and its retry), two upstream calls: none sent twice.
      const sent = toolCalls(sdk.sent);
      expect(sent).toHaveLength(2);
      expect(callsOf('ask_color') - before).toBe(2);
      // The upstream's state travelled sealed inside the broker's, never in the clear.
      const relayedState = (sent[0]!.response?.['result'] as { requestState?: string }).requestState;
      expect(typeof relayedState).toBe('string');
      expect(relayedState).not.toContain('asked-color');
      expect(sent[1]!.body?.['params']).toMatchObject({ requestState: relayedState });
    });
    expect(notes.answers.at(-1)).toEqual({
      tool: 'ask_color',
      inputResponses: { color: { action: 'accept', content: { color: 'blue' } } },
      requestState: 'asked-color',
    });
  });

  it('2025-11-25 host: the upstream form is asked nested on the call stream and its answer reaches the upstream', async () => {
    const before = callsOf('ask_color');
    await using(await host('2025-11-25', 'green'), async (sdk) => {
      const result = await sdk.client.callTool({ name: 'up_ask_color', arguments: {} });
      expect(textOf(result)).toBe('Colour: green');
      expect(sdk.formAsks).toHaveLength(1);
      expect(sdk.formAsks[0]!.message).toContain('Which colour?');
      expect(toolCalls(sdk.sent)).toHaveLength(1);
    });
    expect(callsOf('ask_color') - before).toBe(2);
    expect(notes.answers.at(-1)).toEqual({
      tool: 'ask_color',
      inputResponses: { color: { action: 'accept', content: { color: 'green' } } },
      requestState: 'asked-color',
    });
  });

  it('a form asking for a password is refused before the host sees it, on both eras', async () => {
    for (const era of ['2026-07-28', '2025-11-25'] as const)
      await using(await host(era), async (sdk) => {
        const result = await sdk.client.callTool({ name: 'up_ask_secret', arguments: {} });
        expect(result.isError, era).toBe(true);
        expect(textOf(result), era).toContain('was not shown');
        expect(sdk.formAsks, era).toEqual([]);
      });
    expect(notes.answers.filter((a) => a.tool === 'ask_secret')).toEqual([]);
    // Each refusal counted as the audit counts every form's, by its rule and who wrote the form.
    const metrics = await (
      await stack.fetch(`${stack.brokerUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    const refusals = [...metrics.matchAll(/^broker_form_refusals_total\{([^}]*)\} (\d+)/gm)]
      .filter((m) => m[1]!.includes('origin="upstream"'))
      .reduce((sum, m) => sum + Number(m[2]), 0);
    expect(refusals).toBe(2);
  });

  it('an upstream link that is a lookalike or carries a credential never reaches the host; an allowed one does', async () => {
    const refused = [
      'https://github.com.evil.example/login',
      `https://example.com/continue?access_token=${CANARY}`,
      'https://gіthub.com/login',
    ];
    for (const era of ['2026-07-28', '2025-11-25'] as const)
      await using(await host(era), async (sdk) => {
        for (const url of refused) {
          const result = await sdk.client.callTool({ name: 'up_open_link', arguments: { url } });
          expect(result.isError, `${era} ${url}`).toBe(true);
          expect(textOf(result)).toContain('was not shown');
          const answer = JSON.stringify(result);
          expect(answer).not.toContain(CANARY);
          expect(answer).not.toContain('evil.example');
        }
        expect(sdk.urlAsks, era).toEqual([]);
        const allowed = await sdk.client.callTool({
          name: 'up_open_link',
          arguments: { url: 'https://docs.example.com/continue?step=2' },
        });
        expect(textOf(allowed), era).toBe('Opened.');
        expect(sdk.urlAsks.map((a) => a.url)).toEqual(['https://docs.example.com/continue?step=2']);
        expect(sdk.urlAsks[0]!.message).toContain('Finish at our site');
        expect(sdk.urlAsks[0]!.message).toContain('The link opens example.com.');
      });
    expect(notes.answers.filter((a) => a.tool === 'open_link')).toHaveLength(2);
  });

  const BOTH = { elicitation: { url: {}, form: {} } };
  const answerOf = (color: string) => ({ inputResponses: { color: { action: 'accept', content: { color } } } });
  const colorAnswers = () => notes.answers.filter((a) => a.tool === 'ask_color').length;
  const receiptsOf = async (sub: string) =>
    (
      await stack.db.pool.query<{ id: string; lineage: string; outcome_status: string; waits: boolean }>(
        `SELECT r.id, r.lineage, r.outcome_status, r.redrive_after > now() AS waits
           FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id
          WHERE n.tool = 'up_ask_color' AND n.subject_sub = $1`,
        [sub],
      )
    ).rows;

  it('2026-07-28 host: an accepted operation (the call waited for a connect flow) relays the upstream question; the answer resumes that operation, done once across retries and instances', async () => {
    const before = callsOf('ask_color');
    const answersBefore = colorAnswers();
    const elicited = await elicitConnection(stack, tokens.bob, 'up_ask_color', {});
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'bob'), 'bob');
    const extra = { requestState: elicited.requestState, inputResponses: { connect: { action: 'accept' } } };
    const retried = await callTool(stack, tokens.bob, 'up_ask_color', {}, extra, BOTH);
    const asked = retried.json.result as {
      resultType: string;
      requestState: string;
      inputRequests: Record<string, { method: string; params: { message: string; requestedSchema: unknown } }>;
    };
    // The upstream's question, admitted by the form audit, is the host's; its state sealed in the broker's.
    expect(asked.resultType).toBe('input_required');
    expect(Object.keys(asked.inputRequests)).toEqual(['color']);
    expect(asked.inputRequests['color']!.method).toBe('elicitation/create');
    expect(asked.inputRequests['color']!.params.message).toContain('Which colour?');
    expect(asked.inputRequests['color']!.params.requestedSchema).toEqual({
      type: 'object',
      properties: { color: { type: 'string' } },
    });
    expect(asked.requestState).not.toContain('asked-color');
    expect(callsOf('ask_color') - before).toBe(1);
    // Nothing was done: the receipt records no outcome, and the sweep leaves it to the host's answer.
    const [pending, ...others] = await receiptsOf('bob');
    expect(others).toEqual([]);
    expect(pending).toMatchObject({ lineage: 'mrtr', outcome_status: 'pending', waits: true });

    // Another user cannot answer it: the state is bob's (nothing sent).
    const stolen = await callTool(
      stack,
      tokens.alice,
      'up_ask_color',
      {},
      { ...answerOf('red'), requestState: asked.requestState },
      BOTH,
    );
    expect(stolen.json.error).toMatchObject({ code: -32602 });
    expect(callsOf('ask_color') - before).toBe(1);

    // The host's answer, sent twice at once to the two instances, resumes the same operation: one effective call.
    const answer = { ...answerOf('red'), requestState: asked.requestState };
    const answered = await Promise.all([
      callTool(stack, tokens.bob, 'up_ask_color', {}, answer, BOTH),
      callTool(stack, tokens.bob, 'up_ask_color', {}, answer, BOTH, { baseUrl: stack.secondUrl }),
    ]);
    for (const a of answered) expect(textOf(a.json.result as { content?: unknown })).toBe('Colour: red');
    expect(colorAnswers() - answersBefore).toBe(1);
    expect(notes.answers.at(-1)).toEqual({
      tool: 'ask_color',
      inputResponses: { color: { action: 'accept', content: { color: 'red' } } },
      requestState: 'asked-color',
    });
    // Later duplicates (the answer again, the connect retry again) read the recorded outcome.
    const again = await callTool(stack, tokens.bob, 'up_ask_color', {}, answer, BOTH);
    expect(textOf(again.json.result as { content?: unknown })).toBe('Colour: red');
    const connectAgain = await callTool(stack, tokens.bob, 'up_ask_color', {}, extra, BOTH);
    expect(textOf(connectAgain.json.result as { content?: unknown })).toBe('Colour: red');
    expect(callsOf('ask_color') - before).toBe(2);
    expect(colorAnswers() - answersBefore).toBe(1);
    expect(await receiptsOf('bob')).toEqual([{ ...pending, outcome_status: 'succeeded', waits: true }]);
  });

  it('2025-11-25 host: the nested call waiting for the connect flow asks the upstream question on its stream; done once', async () => {
    const before = callsOf('ask_color');
    const answersBefore = colorAnswers();
    let browser: Promise<{ status: number }> | undefined;
    const sdk = await connectSdkClient(stack, tokens.mallory, {
      era: '2025-11-25',
      url: (params) => {
        browser = openConnectLink(stack, params.url, 'mallory').then((run) =>
          consentAndAuthorize(stack, run, 'mallory'),
        );
        return { action: 'accept' };
      },
      form: () => ({ action: 'accept', content: { color: 'teal' } }),
    });
    await using(sdk, async () => {
      const result = await sdk.client.callTool({ name: 'up_ask_color', arguments: {} });
      expect((await browser)?.status).toBe(200);
      expect(textOf(result)).toBe('Colour: teal');
      expect(sdk.urlAsks).toHaveLength(1);
      expect(sdk.formAsks).toHaveLength(1);
      expect(sdk.formAsks[0]!.message).toContain('Which colour?');
      expect(toolCalls(sdk.sent)).toHaveLength(1);
    });
    expect(callsOf('ask_color') - before).toBe(2);
    expect(colorAnswers() - answersBefore).toBe(1);
    expect(notes.answers.at(-1)).toMatchObject({
      inputResponses: { color: { action: 'accept', content: { color: 'teal' } } },
    });
    expect((await receiptsOf('mallory')).map((r) => [r.lineage, r.outcome_status])).toEqual([['nested', 'succeeded']]);
  });

  it('a host that declares no elicitation is offered none: the upstream refuses, relayed as a tool error', async () => {
    await using(await connectSdkClient(stack, tokens.alice, { era: '2026-07-28' }), async (sdk) => {
      const result = await sdk.client.callTool({ name: 'up_ask_color', arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain('Up Notes answered up_ask_color with an error');
    });
  });
});
