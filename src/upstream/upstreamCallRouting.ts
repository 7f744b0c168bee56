import { ProtocolError, type FetchLike } from '@modelcontextprotocol/client';
import { strictFetch, type Fetch } from '../shared/httpClient.js';
import type { RequestFetch } from '../shared/requestFetch.js';
import { eventData } from './eventStream.js';
import { notSent, type UpstreamWire } from './statelessCall.js';

/** The broker's answer to one upstream question: the user's (an ElicitResult), or an error the upstream gets instead. */
export type UpstreamAskAnswer =
  { kind: 'answer'; result: Record<string, unknown> } | { kind: 'error'; code: number; message: string };

/** Who answers an upstream's questions during one call (upstreamMcpClient.ts UpstreamCallOptions). */
export type UpstreamAsk = (params: Record<string, unknown>) => Promise<UpstreamAskAnswer>;

/** JSON-RPC "method not found" (JSON-RPC 2.0, §5.1): nobody can be asked on this call. */
export const CANNOT_ASK = -32601;

// An upstream's answer is relayed to the host whole: bounded like any document the broker reads.
export const MAX_UPSTREAM_ANSWER_BYTES = 2 * 1024 * 1024;

/** One running call: what reached the upstream, and who answers its questions. */
interface CallState {
  wire: UpstreamWire;
  ask?: UpstreamAsk;
}

// Names the call a request belongs to, between the SDK and the broker's fetch, which removes it: never sent.
const CALL_HEADER = 'x-connect-broker-call';

/**
 * Which call each request of a kept SDK client belongs to (upstreamMcpClient.ts). One client serves
 * concurrent calls and its transport has one fetch for its life, so the fetch is told whose request it
 * sends: the SDK passes a request's own headers (RequestOptions.headers) to the transport with it, on
 * every page and retry of it. (AsyncLocalStorage would do it without a tag, but on Node 20 it installs a
 * promise hook that every promise in the process then pays: 2-3 % of the broker's CPU in bench:mcp's profile.)
 *
 * And which call an upstream's question is about: a 2025-11-25 server sends a request about a client's
 * request on that request's stream (MCP 2025-11-25, Streamable HTTP), and the SDK's handler is not told
 * which stream it came on. The ids are the upstream's to choose (each session counts from 0): one alone
 * names no call, and another session's id (another user's, another upstream's) must never reach this
 * client's calls; so they are kept by client and JSON-RPC id.
 */
export function createCallRouting(deps: { fetch: Fetch | RequestFetch; timeoutMs: number; anonymous: string }) {
  const calls = new Map<string, CallState>();
  let lastCall = 0;
  const askedOn = new Map<string, string>();
  let lastClient = 0;
  const askedKey = (client: string, id: string) => `${client}\n${id}`;

  return {
    /** A new client's name for its upstream's questions (its session's ids are its own). */
    clientScope: (owner: string): string => `${owner}\n${++lastClient}`,
    newTag: (): string => String(++lastCall),
    /** The headers a request of the call `tag` carries to the fetch. */
    headersOf: (tag: string): Record<string, string> => ({ [CALL_HEADER]: tag }),
    /** The call `tag` runs: its wire, and who answers its questions. */
    track(tag: string, wire: UpstreamWire, ask: UpstreamAsk | undefined): void {
      calls.set(tag, { wire, ...(ask && { ask }) });
    },
    /** The call `tag` ended: its questions not yet answered are nobody's now. */
    untrack(tag: string): void {
      calls.delete(tag);
      for (const [id, on] of askedOn) if (on === tag) askedOn.delete(id);
    },

    /**
     * The transport's fetch: `own` is the wire of the requests no call tags (connecting, the SDK's own
     * notifications); `client` names the client (its upstream, user and session) its questions are kept under.
     */
    fetchFor(token: string, own: UpstreamWire, client: string): FetchLike {
      return async (input, init) => {
        const headers = new Headers(init?.headers);
        const tag = headers.get(CALL_HEADER);
        headers.delete(CALL_HEADER);
        const wire = (tag !== null && calls.get(tag)?.wire) || own;
        // The user's token as the bearer; none for an anonymous listing (the upstream's public list).
        if (token !== deps.anonymous) headers.set('authorization', `Bearer ${token}`);
        const bounded = strictFetch(deps.fetch, {
          maxBytes: MAX_UPSTREAM_ANSWER_BYTES,
          ...(tag !== null && { eventStream: requestsOnStream((id) => askedOn.set(askedKey(client, id), tag)) }),
        });
        // Sent from here on, unless the socket says it never left.
        const before = wire.sent;
        wire.sent = true;
        try {
          const response = await bounded(input, { ...init, headers, signal: AbortSignal.timeout(deps.timeoutMs) });
          if (!response.ok) wire.status = response.status;
          return response;
        } catch (err) {
          wire.failure ??= err;
          if (notSent(err)) wire.sent = before;
          throw err;
        }
      };
    },

    /**
     * An upstream's elicitation/create, answered by the call whose stream brought it. One that came on
     * no call's stream (the session's own, which the spec keeps for messages unrelated to a running
     * request), or on a call nobody can be asked for, gets CANNOT_ASK: a JSON-RPC error the upstream
     * decides on, never an answer the user did not give (a `decline` would be one).
     */
    async answerAsk(
      client: string,
      request: { params?: unknown },
      ctx: { mcpReq: { id: unknown } },
    ): Promise<Record<string, unknown>> {
      const key = askedKey(client, JSON.stringify(ctx.mcpReq.id));
      const tag = askedOn.get(key);
      askedOn.delete(key);
      const ask = tag === undefined ? undefined : calls.get(tag)?.ask;
      if (!ask) throw new ProtocolError(CANNOT_ASK, 'The broker cannot ask the user on this call.');
      const answer = await ask((request.params ?? {}) as Record<string, unknown>);
      if (answer.kind === 'error') throw new ProtocolError(answer.code, answer.message);
      return answer.result;
    },
  };
}

/** Each JSON-RPC request on an event stream as it passes: its id (as JSON) given to `found`. Nothing is changed or held back. */
function requestsOnStream(found: (id: string) => void): (chunk: Uint8Array) => void {
  return eventData((event) => {
    try {
      const message = JSON.parse(event) as { method?: unknown; id?: unknown };
      if (typeof message.method === 'string' && (typeof message.id === 'string' || typeof message.id === 'number'))
        found(JSON.stringify(message.id));
    } catch {
      // Not JSON: the SDK reports it.
    }
  });
}
