import {
  Client,
  StreamableHTTPClientTransport,
  UrlElicitationRequiredError,
  type ElicitRequestFormParams,
  type ElicitRequestURLParams,
  type ElicitResult,
  type FetchLike,
} from '@modelcontextprotocol/client';
import { createFetch } from '../../src/shared/httpClient.js';
import type { BrokerStack } from './brokerStack.js';

// A real legacy-capable client from the official SDK against the 2025-11-25
// adapter: `@modelcontextprotocol/client` v2 in its default
// `versionNegotiation: { mode: 'legacy' }` (v2 only pins modern revisions),
// with `supportedProtocolVersions: ['2025-11-25']` so that initialize offers,
// and only accepts, 2025-11-25. It keeps the session (Mcp-Session-Id), opens
// the GET stream after `notifications/initialized`, answers server-to-client
// `elicitation/create` through setRequestHandler, surfaces -32042 as
// UrlElicitationRequiredError and hands `notifications/elicitation/complete`
// to setNotificationHandler.

export const LEGACY = '2025-11-25';

export interface Sent {
  method: string;
  sessionId: string | null;
  protocolVersion: string | null;
  body: Record<string, unknown> | undefined;
  status: number;
}

export interface LegacyClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Every HTTP request the client made (bodies of POSTs), with the status it got. */
  sent: Sent[];
  /** URL elicitations the server asked for (nested) on a call's stream. */
  urlAsks: ElicitRequestURLParams[];
  formAsks: ElicitRequestFormParams[];
  /** elicitationIds of every notifications/elicitation/complete received. */
  completed: string[];
  errors: Error[];
}

export interface Answers {
  url?: (params: ElicitRequestURLParams) => ElicitResult;
  form?: (params: ElicitRequestFormParams) => ElicitResult;
}

export async function connectLegacy(stack: BrokerStack, token: string, answers: Answers): Promise<LegacyClient> {
  // The stack's fetch gives up on a body after 10 s; the GET stream lives longer.
  const caFetch = createFetch({ extraCaPems: [stack.tls.caPem], timeoutMs: 60_000 });
  const sent: Sent[] = [];
  // Records the request side only: reading an SSE body here would hold the exchange.
  const recording: FetchLike = async (url, init) => {
    const response = await caFetch(url, init);
    const headers = new Headers(init?.headers);
    sent.push({
      method: init?.method ?? 'GET',
      sessionId: headers.get('mcp-session-id'),
      protocolVersion: headers.get('mcp-protocol-version'),
      body: typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : undefined,
      status: response.status,
    });
    return response;
  };
  const client = new Client(
    { name: 'legacy-sdk-int-test', version: '1.0.0' },
    { versionNegotiation: { mode: 'legacy' }, supportedProtocolVersions: [LEGACY], capabilities: { elicitation: { form: {}, url: {} } } },
  );
  const urlAsks: ElicitRequestURLParams[] = [];
  const formAsks: ElicitRequestFormParams[] = [];
  const completed: string[] = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params;
    if (params.mode === 'url') {
      urlAsks.push(params);
      return answers.url ? answers.url(params) : { action: 'cancel' };
    }
    formAsks.push(params as ElicitRequestFormParams);
    return answers.form ? answers.form(params as ElicitRequestFormParams) : { action: 'cancel' };
  });
  client.setNotificationHandler('notifications/elicitation/complete', (notification) => {
    completed.push(notification.params.elicitationId);
  });
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.brokerUrl}/mcp`), {
    fetch: recording,
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const errors: Error[] = [];
  client.onerror = (err) => errors.push(err);
  await client.connect(transport);
  return { client, transport, sent, urlAsks, formAsks, completed, errors };
}

export async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Error-level log lines (pino level 50 and up): an unexposed failure inside the broker. */
export function internalErrors(stack: BrokerStack): string[] {
  return stack.logs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
}

export async function closeLegacy(legacy: LegacyClient): Promise<void> {
  await legacy.transport.terminateSession().catch(() => undefined);
  await legacy.client.close();
}

export const toolCalls = (sent: Sent[]) => sent.filter((s) => s.method === 'POST' && s.body?.['method'] === 'tools/call');
export type Created = { status: string; report: { id: string; title: string } };

/** A tools/call the broker must answer with -32042: the SDK's UrlElicitationRequiredError, anything else fails the test. */
export async function expectUrlElicitation(legacy: LegacyClient, name: string, args: Record<string, unknown>): Promise<UrlElicitationRequiredError> {
  const failure = await legacy.client.callTool({ name, arguments: args }).then(
    (result) => new Error(`expected -32042, got a result: ${JSON.stringify(result).slice(0, 300)}`),
    (err: unknown) => err,
  );
  if (!(failure instanceof UrlElicitationRequiredError)) throw failure instanceof Error ? failure : new Error(String(failure));
  return failure;
}
