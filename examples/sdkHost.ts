// A host in code: the official MCP TypeScript SDK client on the broker's /mcp, MCP 2026-07-28, with a
// bearer token from your identity provider (on npm start: npm run -s broker -- dev-token --user alice).
// When a tool needs a connection the user does not have, the broker asks for a URL elicitation: the
// host shows the link, the user connects in their browser, and the SDK's retry completes the call.
//
//   NODE_EXTRA_CA_CERTS=.data/tls/ca.pem TOKEN=$(npm run -s broker -- dev-token --user alice | tail -1) \
//     npx tsx examples/sdkHost.ts reports_list
import { createInterface } from 'node:readline/promises';
import { Client, StreamableHTTPClientTransport, type FetchLike } from '@modelcontextprotocol/client';

export interface HostOptions {
  /** The broker's MCP endpoint. */
  url: string;
  /** An access token for the broker (audience: that URL). */
  token: string;
  /** Shows a connect link to the user and resolves once they are done with it (accept) or gave up (cancel). */
  openLink(url: string, message: string): Promise<'accept' | 'cancel'>;
  fetch?: FetchLike;
}

/** A connected client: it lists the broker's tools and calls one, connecting the user on the way when asked. */
export async function connectHost(options: HostOptions) {
  const client = new Client(
    { name: 'example-host', version: '1.0.0' },
    // URL elicitation declared: the broker may send the user to a connect link.
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { url: {} } } },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params;
    if (params.mode !== 'url') return { action: 'decline' };
    return { action: await options.openLink(params.url, params.message) };
  });
  const transport = new StreamableHTTPClientTransport(new URL(options.url), {
    requestInit: { headers: { Authorization: `Bearer ${options.token}` } },
    ...(options.fetch && { fetch: options.fetch }),
  });
  await client.connect(transport);
  return client;
}

async function main(tool: string): Promise<void> {
  const token = process.env['TOKEN'];
  if (!token) throw new Error('Set TOKEN to an access token for the broker.');
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  const client = await connectHost({
    url: process.env['BROKER_URL'] ?? 'https://127.0.0.1:8443/mcp',
    token,
    openLink: async (url, message) => {
      const answer = await terminal.question(
        `${message}\n  ${url}\nPress Enter once you are done there (or type n to give up): `,
      );
      return answer.trim() === 'n' ? 'cancel' : 'accept';
    },
  });
  const { tools } = await client.listTools();
  process.stderr.write(`Tools: ${tools.map((t) => t.name).join(', ')}\n`);
  const result = await client.callTool({ name: tool, arguments: {} });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  terminal.close();
  await client.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv[2] ?? 'notes_list');
