import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetch } from '../../src/shared/httpClient.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { connectSdkClient, type Era, type SdkClient } from '../support/sdkClient.js';
import { startUpstreamMcp, type UpstreamMcp } from '../support/upstreamMcp.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A 2025-11-25 upstream asks the user during a call with its own server-to-client elicitation/create
// (on the call's event stream; the SDK's server sends an input_required that way on that era). The
// broker judges each question as it judges a 2026-07-28 input_required, asks a 2025-11-25 host nested
// on the host's call, and answers the upstream; one it cannot ask or refuses gets a JSON-RPC error,
// never an answer the user did not give, and the host is told why.

let old: UpstreamMcp;
const CANARY = 'legacy-canary-5d0e8a3b27c4';

describe('a 2025-11-25 upstream asking the user during a call', () => {
  const { stack, tokens } = useBrokerStack(
    {
      extraProviders: async ({ tls }) => {
        const fetch = createFetch({ extraCaPems: [tls.caPem] });
        old = await startUpstreamMcp({
          tls,
          fetch,
          registration: 'cimd',
          metadata: 'challenge',
          era: '2025-11-25',
          eliciting: true,
          streams: true,
        });
        return [
          { id: 'oldnotes', kind: 'mcp', url: old.url, prefix: 'old', registration: 'auto', displayName: 'Old Notes' },
        ];
      },
    },
    { users: ['alice'] },
  );
  afterAll(async () => {
    await old?.close();
  });

  beforeAll(async () => {
    const elicited = await elicitConnection(stack, tokens.alice, 'old_whoami', {});
    const done = await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    expect(done.status).toBe(200);
    await retryConnection(stack, tokens.alice, 'old_whoami', {}, elicited.requestState, 'accept');
  });

  const host = (era: Era, color = 'blue') =>
    connectSdkClient(stack, tokens.alice, {
      era,
      form: () => ({ action: 'accept', content: { color } }),
      url: () => ({ action: 'accept' }),
    });
  async function using<T>(sdk: SdkClient, run: (sdk: SdkClient) => Promise<T>): Promise<T> {
    try {
      return await run(sdk);
    } finally {
      await sdk.client.close();
    }
  }
  const textOf = (result: { content?: unknown }) =>
    ((result.content as { text: string }[] | undefined) ?? []).map((c) => c.text).join('\n');
  const errorsSince = (from: number) =>
    old.responses.slice(from).filter((r) => r['error'] !== undefined) as { error: { code: number; message: string } }[];

  it("a 2025-11-25 host is asked the upstream's form nested on its call, and its answer reaches the upstream", async () => {
    const from = old.responses.length;
    await using(await host('2025-11-25'), async (sdk) => {
      const result = await sdk.client.callTool({ name: 'old_ask_color', arguments: {} });
      expect(textOf(result)).toBe('Colour: blue');
      expect(sdk.formAsks).toHaveLength(1);
      expect(sdk.formAsks[0]!.message).toContain('Old Notes asks:');
      expect(sdk.formAsks[0]!.message).toContain('Which colour?');
    });
    expect(old.responses.slice(from)).toEqual([
      expect.objectContaining({ result: { action: 'accept', content: { color: 'blue' } } }),
    ]);
  });

  it('concurrent calls on one session each get their own question and answer', async () => {
    const red = await host('2025-11-25', 'red');
    const green = await host('2025-11-25', 'green');
    await using(red, () =>
      using(green, async () => {
        const [a, b] = await Promise.all([
          red.client.callTool({ name: 'old_ask_color', arguments: {} }),
          green.client.callTool({ name: 'old_ask_color', arguments: {} }),
        ]);
        expect(textOf(a)).toBe('Colour: red');
        expect(textOf(b)).toBe('Colour: green');
        expect(red.formAsks).toHaveLength(1);
        expect(green.formAsks).toHaveLength(1);
      }),
    );
    // Both on alice's one session.
    expect(old.initializes).toEqual(['up-alice']);
  });

  it('a lookalike or credential-carrying link is refused before the host sees it; the upstream gets an error', async () => {
    await using(await host('2025-11-25'), async (sdk) => {
      for (const url of ['https://github.com.evil.example/login', `https://example.com/next?access_token=${CANARY}`]) {
        const from = old.responses.length;
        const result = await sdk.client.callTool({ name: 'old_open_link', arguments: { url } });
        expect(textOf(result)).toContain('was not shown');
        expect(JSON.stringify(result)).not.toContain(CANARY);
        expect(JSON.stringify(result)).not.toContain('evil.example');
        expect(errorsSince(from)).toEqual([
          expect.objectContaining({ error: expect.objectContaining({ code: -32602 }) }),
        ]);
      }
      expect(sdk.urlAsks).toEqual([]);
      // An allowed link is asked, with the broker's words on where it leads.
      const allowed = await sdk.client.callTool({
        name: 'old_open_link',
        arguments: { url: 'https://docs.example.com/continue?step=2' },
      });
      expect(textOf(allowed)).toBe('Opened.');
      expect(sdk.urlAsks.map((a) => a.url)).toEqual(['https://docs.example.com/continue?step=2']);
    });
  });

  it('a 2026-07-28 host cannot be asked during the call: the upstream gets an error, the host a result saying why', async () => {
    const from = old.responses.length;
    await using(await host('2026-07-28'), async (sdk) => {
      const result = await sdk.client.callTool({ name: 'old_ask_color', arguments: {} });
      expect(textOf(result)).toContain('Old Notes asked a question during old_ask_color that was not shown');
      expect(textOf(result)).toContain('MCP 2026-07-28');
      expect(sdk.formAsks).toEqual([]);
    });
    expect(errorsSince(from)).toEqual([
      expect.objectContaining({
        error: expect.objectContaining({ code: -32601, message: expect.stringContaining('cannot ask the user') }),
      }),
    ]);
  });
});
