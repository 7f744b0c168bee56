import {
  Client,
  StreamableHTTPClientTransport,
  type ElicitRequestFormParams,
  type ElicitRequestURLParams,
  type ElicitResult,
  type FetchLike,
  type OAuthClientProvider,
} from '@modelcontextprotocol/client';
import { createFetch } from '../../src/shared/httpClient.js';
import type { BrokerStack } from './brokerStack.js';

// The official SDK client (`@modelcontextprotocol/client` v2) against the stack's /mcp, as a host
// of either revision connects:
// - 2026-07-28: pinned; the SDK fulfils every `input_required` itself, hands each embedded
//   `elicitation/create` to the handler and retries with `inputResponses` and the echoed
//   `requestState` (a state-only answer too, paced by the SDK, up to `maxRounds`).
// - 2025-11-25: v2's default `versionNegotiation: { mode: 'legacy' }` (v2 only pins modern
//   revisions) with `supportedProtocolVersions: ['2025-11-25']`, so initialize offers, and only
//   accepts, 2025-11-25. It keeps the session (Mcp-Session-Id), opens the GET stream after
//   `notifications/initialized`, answers server-to-client `elicitation/create` (nested),
//   surfaces -32042 as UrlElicitationRequiredError and hands `notifications/elicitation/complete`
//   to its notification handler.

export type Era = '2026-07-28' | '2025-11-25';

/** Where the client connects: a stack, or anything with an /mcp URL and the CA it is served under (a balancer). */
export type SdkTarget = Pick<BrokerStack, 'mcpResourceUrl' | 'tls'>;

export interface Sent {
  method: string;
  /** Every header of the request, by lower-case name. */
  headers: Record<string, string>;
  sessionId: string | null;
  protocolVersion: string | null;
  body: Record<string, unknown> | undefined;
  status: number;
  /**
   * The JSON-RPC answer (a JSON body, or the `data:` of an SSE one). Read on 2026-07-28 only, where
   * every answer ends: on 2025-11-25 a call's stream stays open until the client answers on it.
   */
  response: Record<string, unknown> | undefined;
}

export interface SdkClientOptions {
  era: Era;
  /** Answers URL-mode elicitations (a host may first walk the user through the link); giving it declares `elicitation.url`. */
  url?: (params: ElicitRequestURLParams) => ElicitResult | Promise<ElicitResult>;
  /** Answers form-mode elicitations; giving it declares `elicitation.form`. */
  form?: (params: ElicitRequestFormParams) => ElicitResult;
  /** How many `input_required` rounds the SDK fulfils for one call (2026-07-28). */
  maxRounds?: number;
  /** What the transport sends through (default: a fetch that trusts the stack's CA). */
  fetch?: FetchLike;
}

export interface SdkClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Every HTTP request the client made, with what it got. */
  sent: Sent[];
  urlAsks: ElicitRequestURLParams[];
  formAsks: ElicitRequestFormParams[];
  /** elicitationIds of every notifications/elicitation/complete received (2025-11-25). */
  completed: string[];
  /** What the SDK reported through `onerror`. */
  errors: Error[];
}

/**
 * A client of `era` for /mcp, not yet connected, that sends `auth` (a bearer token, or the host's
 * own OAuth provider) and records every request.
 */
export function sdkClient(stack: SdkTarget, auth: string | OAuthClientProvider, options: SdkClientOptions): SdkClient {
  // The stack's fetch gives up on a body after 10 s; a 2025-11-25 GET stream lives longer.
  const base = options.fetch ?? createFetch({ extraCaPems: [stack.tls.caPem], timeoutMs: 60_000 });
  const sent: Sent[] = [];
  const recording: FetchLike = async (url, init) => {
    const response = await base(url, init);
    const headers = new Headers(init?.headers);
    sent.push({
      method: init?.method ?? 'GET',
      headers: Object.fromEntries(headers.entries()),
      sessionId: headers.get('mcp-session-id'),
      protocolVersion: headers.get('mcp-protocol-version'),
      body: typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : undefined,
      status: response.status,
      response: options.era === '2026-07-28' ? await answerOf(response) : undefined,
    });
    return response;
  };
  const declared = { ...(options.url ? { url: {} } : {}), ...(options.form ? { form: {} } : {}) };
  const capabilities = options.url || options.form ? { elicitation: declared } : {};
  const client = new Client(
    { name: 'connect-broker-tests', version: '1.0.0' },
    options.era === '2026-07-28'
      ? {
          versionNegotiation: { mode: { pin: '2026-07-28' } },
          capabilities,
          ...(options.maxRounds ? { inputRequired: { maxRounds: options.maxRounds } } : {}),
        }
      : { versionNegotiation: { mode: 'legacy' }, supportedProtocolVersions: ['2025-11-25'], capabilities },
  );
  const urlAsks: ElicitRequestURLParams[] = [];
  const formAsks: ElicitRequestFormParams[] = [];
  if (options.url || options.form) {
    client.setRequestHandler('elicitation/create', async (request) => {
      const params = request.params;
      if (params.mode === 'url') {
        urlAsks.push(params);
        return options.url ? options.url(params) : { action: 'cancel' };
      }
      formAsks.push(params as ElicitRequestFormParams);
      return options.form ? options.form(params as ElicitRequestFormParams) : { action: 'cancel' };
    });
  }
  const completed: string[] = [];
  if (options.era === '2025-11-25') {
    client.setNotificationHandler('notifications/elicitation/complete', (notification) => {
      completed.push(notification.params.elicitationId);
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(stack.mcpResourceUrl), {
    fetch: recording,
    ...(typeof auth === 'string'
      ? { requestInit: { headers: { Authorization: `Bearer ${auth}` } } }
      : { authProvider: auth }),
  });
  const errors: Error[] = [];
  client.onerror = (err) => errors.push(err);
  return { client, transport, sent, urlAsks, formAsks, completed, errors };
}

/** {@link sdkClient}, connected (initialize on 2025-11-25). */
export async function connectSdkClient(
  stack: SdkTarget,
  auth: string | OAuthClientProvider,
  options: SdkClientOptions,
): Promise<SdkClient> {
  const built = sdkClient(stack, auth, options);
  await built.client.connect(built.transport);
  return built;
}

export const toolCalls = (sent: Sent[]) =>
  sent.filter((s) => s.method === 'POST' && s.body?.['method'] === 'tools/call');

/** The JSON-RPC message of a JSON or SSE answer, read from a copy; anything else (a page, an empty 202) is undefined. */
async function answerOf(response: Response): Promise<Record<string, unknown> | undefined> {
  if (!/json|event-stream/.test(response.headers.get('content-type') ?? '')) return undefined;
  const text = await response.clone().text();
  const data = /^data: (.*)$/m.exec(text)?.[1] ?? text;
  try {
    return data ? (JSON.parse(data) as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
