import { describe, expect, it } from 'vitest';
import { connectHost } from '../../examples/sdkHost.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { consentAndAuthorize, openConnectLink } from '../support/connectFlow.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The host in code that docs/hosts.md shows (examples/sdkHost.ts), run as written against a broker:
// it lists the tools, and a call that needs a connection shows the link, which the user follows.
describe('the SDK host example', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });

  it('lists the tools, is sent to the connect link once, and gets the result of the call', async () => {
    const links: string[] = [];
    const client = await connectHost({
      url: stack.mcpResourceUrl,
      token: tokens.alice,
      fetch: createFetch({ extraCaPems: [stack.tls.caPem] }),
      openLink: async (url, message) => {
        links.push(url);
        expect(message).toContain('connect your Report Service account');
        await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice'), 'alice');
        return 'accept';
      },
    });
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('reports_list');
      const result = await client.callTool({ name: 'reports_list', arguments: {} });
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ reports: expect.any(Array) });
      expect(links).toHaveLength(1);
      expect(new URL(links[0]!).origin).toBe(stack.brokerUrl);
    } finally {
      await client.close();
    }
  });
});
