import { Client, StreamableHTTPClientTransport, type ElicitRequestURLParams, type ElicitResult, type FetchLike } from '@modelcontextprotocol/client';
import { createFetch } from '../../src/shared/httpClient.js';
import type { BrokerStack } from './brokerStack.js';
import type { Sent } from './legacySdkClient.js';

// The official SDK v2 client pinned to 2026-07-28 with URL elicitation
// declared, as an MCP host of that revision connects: it fulfils every
// `input_required` itself, hands an embedded URL `elicitation/create` to the
// handler, and retries with `inputResponses` and the echoed `requestState`
// (a state-only answer too, paced by the SDK, up to `maxRounds`).

export interface MrtrSent extends Sent {
  /** The JSON-RPC answer (a JSON body, or the `data:` of an SSE one). */
  response: Record<string, unknown> | undefined;
}

export interface MrtrClient {
  client: Client;
  /** Every HTTP request the client made, with what it got. */
  sent: MrtrSent[];
  urlAsks: ElicitRequestURLParams[];
  errors: Error[];
}

export async function connectMrtr(stack: BrokerStack, token: string, url: (params: ElicitRequestURLParams) => ElicitResult, options: { maxRounds?: number } = {}): Promise<MrtrClient> {
  const caFetch = createFetch({ extraCaPems: [stack.tls.caPem], timeoutMs: 60_000 });
  const sent: MrtrSent[] = [];
  const recording: FetchLike = async (target, init) => {
    const response = await caFetch(target, init);
    const text = await response.clone().text();
    const data = /^data: (.*)$/m.exec(text)?.[1] ?? text;
    const headers = new Headers(init?.headers);
    sent.push({
      method: init?.method ?? 'GET',
      sessionId: headers.get('mcp-session-id'),
      protocolVersion: headers.get('mcp-protocol-version'),
      body: typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : undefined,
      status: response.status,
      response: data ? (JSON.parse(data) as Record<string, unknown>) : undefined,
    });
    return response;
  };
  const client = new Client(
    { name: 'mrtr-sdk-int-test', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { url: {} } }, ...(options.maxRounds ? { inputRequired: { maxRounds: options.maxRounds } } : {}) },
  );
  const urlAsks: ElicitRequestURLParams[] = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params;
    if (params.mode !== 'url') return { action: 'cancel' };
    urlAsks.push(params);
    return url(params);
  });
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.brokerUrl}/mcp`), {
    fetch: recording,
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const errors: Error[] = [];
  client.onerror = (err) => errors.push(err);
  await client.connect(transport);
  return { client, sent, urlAsks, errors };
}
