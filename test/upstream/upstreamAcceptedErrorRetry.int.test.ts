import { afterAll, describe, expect, it } from 'vitest';
import { UrlElicitationRequiredError } from '@modelcontextprotocol/client';
import { consentAndAuthorize, openConnectLink } from '../support/connectFlow.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { connectSdkClient, toolCalls } from '../support/sdkClient.js';
import { startUpstreamMcp, type UpstreamMcp } from '../support/upstreamMcp.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The 2025-11-25 -32042 lineage (LEGACY_URL_ELICITATION=error): the host's retry after connecting is
// the request that performs the accepted operation, so an upstream question is asked nested on that
// retry's stream, its answer reaches the upstream, and the operation is done once.

let notes: UpstreamMcp;

describe('an accepted operation on the -32042 lineage asks the upstream question on the retry', () => {
  const { stack, tokens } = useBrokerStack(
    {
      legacyUrlElicitation: 'error',
      extraProviders: async ({ tls }) => {
        const fetch = createFetch({ extraCaPems: [tls.caPem] });
        notes = await startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge', eliciting: true });
        return [{ id: 'upnotes', kind: 'mcp', url: notes.url, prefix: 'up', registration: 'auto' }];
      },
    },
    { users: ['alice'] },
  );
  afterAll(async () => {
    await notes?.close();
  });

  it('the retry after connecting is asked, the answer reaches the upstream, and a second retry reads the outcome', async () => {
    const sdk = await connectSdkClient(stack, tokens.alice, {
      era: '2025-11-25',
      url: () => ({ action: 'accept' }),
      form: () => ({ action: 'accept', content: { color: 'violet' } }),
    });
    const textOf = (result: { content?: unknown }) => (result.content as { text: string }[])[0]!.text;
    try {
      const first = await sdk.client.callTool({ name: 'up_ask_color', arguments: {} }).catch((err: unknown) => err);
      expect(first).toBeInstanceOf(UrlElicitationRequiredError);
      const [link] = (first as UrlElicitationRequiredError).elicitations;
      const done = await consentAndAuthorize(stack, await openConnectLink(stack, link!.url, 'alice'), 'alice');
      expect(done.status).toBe(200);
      expect(notes.calls).toEqual([]);
      const retried = await sdk.client.callTool({ name: 'up_ask_color', arguments: {} });
      expect(textOf(retried)).toBe('Colour: violet');
      expect(sdk.formAsks.map((f) => f.message)).toEqual([expect.stringContaining('Which colour?')]);
      // The question (nothing done), then the answer: one effective upstream call.
      expect(notes.calls.map((c) => c.tool)).toEqual(['ask_color', 'ask_color']);
      expect(notes.answers).toEqual([
        {
          tool: 'ask_color',
          inputResponses: { color: { action: 'accept', content: { color: 'violet' } } },
          requestState: 'asked-color',
        },
      ]);
      const again = await sdk.client.callTool({ name: 'up_ask_color', arguments: {} });
      expect(textOf(again)).toBe('Colour: violet');
      expect(notes.calls).toHaveLength(2);
      expect(toolCalls(sdk.sent)).toHaveLength(3);
      const receipts = (
        await stack.db.pool.query(
          `SELECT r.lineage, r.outcome_status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id
            WHERE n.tool = 'up_ask_color' AND n.subject_sub = 'alice'`,
        )
      ).rows;
      expect(receipts).toEqual([{ lineage: 'error_retry', outcome_status: 'succeeded' }]);
    } finally {
      await sdk.client.close();
    }
  });
});
