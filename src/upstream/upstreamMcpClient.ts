import { createHash } from 'node:crypto';
import {
  Client,
  type DiscoverResult,
  ProtocolError,
  StreamableHTTPClientTransport,
  type FetchLike,
  type ProtocolEra,
} from '@modelcontextprotocol/client';
import { OutcomeUnknownError } from '../broker/acceptOriginalOperation.js';
import { UpstreamUnauthorizedError } from '../broker/forgetConnection.js';
import { UnavailableError } from '../errors/appError.js';
import { LEGACY_VERSION, MODERN_VERSION } from '../mcp/protocol.js';
import { FetchRefusedError, strictFetch, type Fetch } from '../shared/httpClient.js';
import type { RequestFetch } from '../shared/requestFetch.js';
import { eventData } from './eventStream.js';
import { createOutputValidator } from './outputValidator.js';
import { isInputRequired, newWire, notSent, plainCall, statelessCall, type UpstreamWire } from './statelessCall.js';

export interface UpstreamMcpDeps {
  /** The broker's fetch (its CAs, no TLS shortcut); with a `post` (createRequestFetch), calls to 2026-07-28 upstreams take statelessCall.ts. */
  fetch: Fetch | RequestFetch;
  /** Each request's deadline, the whole answer included. */
  timeoutMs: number;
  /** The broker's name and version, sent as clientInfo. */
  clientInfo: { name: string; version: string };
}

/** One tool as the upstream lists it (MCP 2026-07-28, Tool), read loosely: the broker passes it through. */
export interface UpstreamTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

export interface UpstreamToolList {
  tools: UpstreamTool[];
  /** The upstream's cache hints on its answer (MCP 2026-07-28, caching), when it gave them. */
  ttlMs: number | undefined;
  cacheScope: 'public' | 'private' | undefined;
}

/** What a proxied tools/call came back with: a result (a tool error is one) or the upstream's JSON-RPC error. */
export type UpstreamCallAnswer =
  | { kind: 'result'; result: Record<string, unknown> }
  | { kind: 'error'; code: number; message: string }
  /** The upstream asks for the user's input before it acts (MCP 2026-07-28, input_required): nothing done yet. */
  | { kind: 'input_required'; inputRequests: Record<string, unknown>; requestState: string | undefined };

/** What one tools/call carries beyond its arguments. */
export interface UpstreamCallOptions {
  /** The elicitation modes to declare (the host's, for this call); declared to 2026-07-28 upstreams only. */
  elicitation?: { form: boolean; url: boolean };
  /** The retry of an input_required answer: the user's answers, keyed as the upstream named them, and its requestState. */
  inputResponses?: Record<string, unknown>;
  requestState?: string;
  /**
   * Answers an `elicitation/create` a 2025-11-25 upstream sends on this call's stream (MCP
   * 2025-11-25, Elicitation): the user's answer, or a JSON-RPC error for the upstream to decide on.
   * Without it, the upstream is answered CANNOT_ASK.
   */
  ask?: (params: Record<string, unknown>) => Promise<UpstreamAskAnswer>;
}

/** The broker's answer to one upstream question: the user's (an ElicitResult), or an error the upstream gets instead. */
export type UpstreamAskAnswer =
  { kind: 'answer'; result: Record<string, unknown> } | { kind: 'error'; code: number; message: string };

/** JSON-RPC "method not found" (JSON-RPC 2.0, §5.1): nobody can be asked on this call. */
export const CANNOT_ASK = -32601;

/** The upstream could not be asked (refused the connection, no such host, its certificate): nothing was done there. */
export class UpstreamUnreachableError extends UnavailableError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, expose: true });
  }
}

// An upstream's answer is relayed to the host whole: bounded like any document the broker reads.
export const MAX_UPSTREAM_ANSWER_BYTES = 2 * 1024 * 1024;

type Elicitation = { form?: Record<string, never>; url?: Record<string, never> };

/** One connected SDK client, kept for the next calls of its (upstream, user's token, modes): many at once. */
interface Kept {
  client: Client;
  /** Its key in `kept`, and whose it is: the upstream and the token's digest (a 401 drops all of theirs). */
  key: string;
  owner: string;
  usedAt: number;
  /** Calls running on it: a client dropped while some run is closed when the last one ends. */
  running: number;
  dropped: boolean;
}

// Connected clients kept per (upstream, user's token; on 2026-07-28 also the elicitation modes declared),
// each ended after this long unused, the least recently used first past the bound.
const MAX_CLIENTS = 1_000;
const CLIENT_IDLE_MS = 5 * 60_000;

/** One running call: what reached the upstream, and who answers its questions. */
interface CallState {
  wire: UpstreamWire;
  ask?: UpstreamCallOptions['ask'];
}

// The "token" of a request sent without one: its clients are kept apart from every user's.
const ANONYMOUS = '';

// Names the call a request belongs to, between the SDK and the broker's fetch, which removes it: never sent.
const CALL_HEADER = 'x-connect-broker-call';

/**
 * The official SDK client (`@modelcontextprotocol/client`) on one upstream MCP server, stateless
 * 2026-07-28 or a 2025-11-25 session, speaking for one user: their upstream access token as the bearer (never the host's),
 * the broker's fetch with a deadline on each request, its answer bounded, no redirect followed
 * (the URL was checked by the URL policy when the entry was read, and a redirect would leave it).
 * Clients stay connected between calls and serve concurrent ones.
 */
export function createUpstreamMcp(deps: UpstreamMcpDeps) {
  // The SDK's own deadline comes after the fetch's, so the fetch's failure is the one that explains it.
  const sdkTimeout = deps.timeoutMs + 500;
  const post = 'post' in deps.fetch ? deps.fetch.post : undefined;
  // The upstream's schemas are checked with its patterns on RE2, in a time budget, on both ways of calling it.
  const validator = createOutputValidator();
  // What each upstream speaks, learnt at its first connection: 2026-07-28 (stateless), or 2025-11-25 (sessions).
  const eras = new Map<string, ProtocolEra>();
  // Each user's server/discover answer, adopted by their other clients: the SDK reuses one only within
  // one authorization context (ConnectOptions.prior), so it is kept per (upstream, token), not per upstream.
  const discovered = new Map<string, { discover: DiscoverResult; usedAt: number }>();
  const kept = new Map<string, Kept>();
  const opening = new Map<string, Promise<Kept>>();
  // Each running call's wire state, by the tag its requests carry. One client serves concurrent calls
  // and its transport has one fetch for its life, so the fetch is told whose request it sends: the SDK
  // passes a request's own headers (RequestOptions.headers) to the transport with it, on every page and
  // retry of it. (AsyncLocalStorage would do it without a tag, but on Node 20 it installs a promise
  // hook that every promise in the process then pays: 2-3 % of the broker's CPU in bench:mcp's profile.)
  const calls = new Map<string, CallState>();
  let lastCall = 0;
  // The upstream's requests seen on a call's event stream, by client and JSON-RPC id: the call they
  // belong to (its tag). A 2025-11-25 server sends a request about a client's request on that request's
  // stream (MCP 2025-11-25, Streamable HTTP), and the SDK's handler is not told which stream it came on.
  // The ids are the upstream's to choose (each session counts from 0): one alone names no call, and
  // another session's id (another user's, another upstream's) must never reach this client's calls.
  const askedOn = new Map<string, string>();
  let lastClient = 0;
  const askedKey = (client: string, id: string) => `${client}\n${id}`;

  const ownerOf = (url: string, token: string) => `${url}\n${createHash('sha256').update(token).digest('base64url')}`;

  /**
   * The transport's fetch: `own` is the wire of the requests no call tags (connecting, the SDK's own
   * notifications); `client` names the client (its upstream, user and session) its questions are kept under.
   */
  function fetchFor(token: string, own: UpstreamWire, client: string): FetchLike {
    return async (input, init) => {
      const headers = new Headers(init?.headers);
      const tag = headers.get(CALL_HEADER);
      headers.delete(CALL_HEADER);
      const wire = (tag !== null && calls.get(tag)?.wire) || own;
      // The user's token as the bearer; none for an anonymous listing (the upstream's public list).
      if (token !== ANONYMOUS) headers.set('authorization', `Bearer ${token}`);
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
  }

  /** A new connected client; a 401 while connecting is UpstreamUnauthorizedError. */
  async function open(url: string, token: string, owner: string, key: string, elicitation?: Elicitation) {
    const era = eras.get(url);
    // A 2025-11-25 session is declared both elicitation modes: the broker decides per call who can be asked.
    // (So is a first connection, which may become one; a 2026-07-28 client declares the call's modes.)
    const capabilities = era !== 'modern' ? { elicitation: { form: {}, url: {} } } : elicitation ? { elicitation } : {};
    const client = new Client(deps.clientInfo, {
      // Unknown yet: server/discover first, then initialize if the upstream is a 2025-11-25 one.
      versionNegotiation: { mode: era === 'legacy' ? 'legacy' : era === 'modern' ? { pin: MODERN_VERSION } : 'auto' },
      ...(era === 'legacy' && { supportedProtocolVersions: [LEGACY_VERSION] }),
      capabilities,
      inputRequired: { autoFulfill: false },
      jsonSchemaValidator: validator,
    });
    // This client's name for its upstream's questions: its session's ids are its own.
    const scope = `${owner}\n${++lastClient}`;
    if (era !== 'modern')
      client.setRequestHandler(
        'elicitation/create',
        // The caller's answer is an ElicitResult, checked there (ElicitResultSchema).
        async (request, ctx) => (await answerAsk(scope, request, ctx)) as { action: 'accept' | 'decline' | 'cancel' },
      );
    // Connecting sends nothing that does anything: its wire is the client's own, no call's.
    const wire = newWire();
    const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: fetchFor(token, wire, scope) });
    const prior = era === 'modern' ? discovered.get(owner) : undefined;
    if (prior) remember(owner, prior.discover);
    try {
      await client.connect(transport, {
        timeout: sdkTimeout,
        ...(prior && { prior: { kind: 'modern', discover: prior.discover } }),
      });
    } catch (err) {
      await client.close().catch(() => undefined);
      throwIfRefused(wire, owner);
      throw err;
    }
    const spoken = client.getProtocolEra();
    if (spoken) eras.set(url, spoken);
    const discover = client.getDiscoverResult();
    if (spoken === 'modern' && discover) remember(owner, discover);
    // The first connection found a 2026-07-28 upstream: made again declaring the call's modes, its
    // discover answer adopted (nothing sent).
    if (era === undefined && spoken === 'modern') {
      await client.close().catch(() => undefined);
      return open(url, token, owner, key, elicitation);
    }
    // A 2025-11-25 session declares the same whatever the modes: one per user.
    const entry: Kept = {
      client,
      key: spoken === 'legacy' ? owner : key,
      owner,
      usedAt: Date.now(),
      running: 0,
      dropped: false,
    };
    const previous = kept.get(entry.key);
    if (previous) drop(previous);
    keep(entry);
    return entry;
  }

  /**
   * An upstream's elicitation/create, answered by the call whose stream brought it. One that came on
   * no call's stream (the session's own, which the spec keeps for messages unrelated to a running
   * request), or on a call nobody can be asked for, gets CANNOT_ASK: a JSON-RPC error the upstream
   * decides on, never an answer the user did not give (a `decline` would be one).
   */
  async function answerAsk(
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
  }

  /** A kept client for (url, token, modes), or a new one: one connection at a time per key. */
  async function acquire(url: string, token: string, elicitation?: Elicitation): Promise<Kept> {
    const owner = ownerOf(url, token);
    const key =
      eras.get(url) === 'legacy' ? owner : `${owner}\n${elicitation?.form ? 'f' : ''}${elicitation?.url ? 'u' : ''}`;
    sweep();
    const found = kept.get(key);
    if (found) {
      found.usedAt = Date.now();
      keep(found);
      return found;
    }
    let pending = opening.get(key);
    if (!pending) {
      pending = open(url, token, owner, key, elicitation).finally(() => opening.delete(key));
      opening.set(key, pending);
    }
    return pending;
  }

  /** Kept as the most recently used (a Map iterates in insertion order), the least recently used dropped past the bound. */
  function keep(entry: Kept): void {
    kept.delete(entry.key);
    kept.set(entry.key, entry);
    while (kept.size > MAX_CLIENTS) drop(kept.values().next().value!);
  }

  /** The user's discover answer, as the most recently used. */
  function remember(owner: string, discover: DiscoverResult): void {
    discovered.delete(owner);
    discovered.set(owner, { discover, usedAt: Date.now() });
    while (discovered.size > MAX_CLIENTS) discovered.delete(discovered.keys().next().value!);
  }

  /** Ends the clients (and forgets the discover answers) unused for CLIENT_IDLE_MS, the least recently used first. */
  function sweep(): void {
    const now = Date.now();
    for (const entry of kept.values()) {
      if (now - entry.usedAt <= CLIENT_IDLE_MS) break;
      drop(entry);
    }
    for (const [owner, entry] of discovered) {
      if (now - entry.usedAt <= CLIENT_IDLE_MS) break;
      discovered.delete(owner);
    }
  }

  /** Not handed out again; closed once no call runs on it (closing the transport would end theirs). */
  function drop(entry: Kept): void {
    if (kept.get(entry.key) === entry) kept.delete(entry.key);
    entry.dropped = true;
    if (entry.running === 0) void entry.client.close().catch(() => undefined);
  }

  /** A 401 on `wire`: the token was refused, so its clients are dropped and the call ends as UpstreamUnauthorizedError. */
  function throwIfRefused(wire: UpstreamWire, owner: string): void {
    if (wire.status !== 401) return;
    forget(owner);
    throw new UpstreamUnauthorizedError('The upstream MCP server refused the access token.');
  }

  /** Everything kept for this token at this upstream: it was refused. */
  function forget(owner: string): void {
    discovered.delete(owner);
    for (const entry of [...kept.values()]) if (entry.owner === owner) drop(entry);
  }

  /**
   * Runs `run` on a connected client with `wire` as the call's own (`run` passes `headers` with each
   * request it makes). A 401 drops the token's clients (UpstreamUnauthorizedError); a 404 on a 2025-11-25 session, which the upstream ended (MCP
   * 2025-11-25, Session Management) without doing anything, initialises again once; any other failure
   * drops the client (a transport in an unknown state), never the calls running on it.
   */
  async function withClient<T>(
    url: string,
    token: string,
    wire: UpstreamWire,
    run: (client: Client, headers: Record<string, string>) => Promise<T>,
    elicitation?: Elicitation,
    ask?: UpstreamCallOptions['ask'],
  ): Promise<T> {
    const tag = String(++lastCall);
    for (let attempt = 0; ; attempt++) {
      const entry = await acquire(url, token, elicitation);
      Object.assign(wire, newWire());
      calls.set(tag, { wire, ...(ask && { ask }) });
      entry.running++;
      try {
        return await run(entry.client, { [CALL_HEADER]: tag });
      } catch (err) {
        throwIfRefused(wire, entry.owner);
        const answered = err instanceof ProtocolError && wire.failure === undefined && wire.status === undefined;
        if (!answered) {
          drop(entry);
          // And what it said it speaks: the next client asks again (it may have changed).
          discovered.delete(entry.owner);
        }
        if (wire.status === 404 && entry.client.getProtocolEra() === 'legacy' && attempt === 0) continue;
        throw err;
      } finally {
        calls.delete(tag);
        for (const [id, on] of askedOn) if (on === tag) askedOn.delete(id);
        entry.running--;
        if (entry.dropped && entry.running === 0) void entry.client.close().catch(() => undefined);
      }
    }
  }

  return {
    /**
     * The user's tools/list at the upstream, every page; with no token (undefined), the list the upstream
     * gives anyone, or UpstreamUnauthorizedError where it lists its tools only to a signed-in user.
     */
    async listTools(url: string, token: string | undefined): Promise<UpstreamToolList> {
      try {
        return await withClient(url, token ?? ANONYMOUS, newWire(), async (client, headers) => {
          const listed = (await client.listTools(undefined, { timeout: sdkTimeout, cacheMode: 'bypass', headers })) as {
            tools: UpstreamTool[];
            ttlMs?: unknown;
            cacheScope?: unknown;
          };
          return {
            tools: listed.tools,
            ttlMs: typeof listed.ttlMs === 'number' && listed.ttlMs >= 0 ? listed.ttlMs : undefined,
            cacheScope:
              listed.cacheScope === 'public' || listed.cacheScope === 'private' ? listed.cacheScope : undefined,
          };
        });
      } catch (err) {
        if (err instanceof UpstreamUnauthorizedError) throw err;
        throw new UpstreamUnreachableError(`The upstream MCP server did not list its tools (${describe(err)}).`, {
          cause: err,
        });
      }
    },

    /**
     * One tools/call, sent at most once. Its answer, or: UpstreamUnauthorizedError (a 401: nothing
     * was done), UpstreamUnreachableError (never reached it), OutcomeUnknownError (sent, and no
     * answer the broker can read came back within the deadline: it may have been done).
     */
    async callTool(
      url: string,
      token: string,
      name: string,
      args: Record<string, unknown>,
      definition: UpstreamTool,
      options: UpstreamCallOptions = {},
    ): Promise<UpstreamCallAnswer> {
      const modes = options.elicitation;
      const elicitation =
        modes && (modes.form || modes.url)
          ? { ...(modes.form && { form: {} }), ...(modes.url && { url: {} }) }
          : undefined;
      // This call's own wire state: connecting (or another call on the same client) sends nothing it counts.
      const wire = newWire();
      const params = {
        name,
        arguments: args,
        ...(options.inputResponses !== undefined && { inputResponses: options.inputResponses }),
        ...(options.requestState !== undefined && { requestState: options.requestState }),
      };
      try {
        // A 2026-07-28 upstream (learnt when its tools were listed): no client, one request (statelessCall.ts).
        if (post && eras.get(url) === 'modern' && plainCall(definition)) {
          const call = {
            url,
            token,
            name,
            params,
            definition,
            clientInfo: deps.clientInfo,
            capabilities: elicitation ? { elicitation } : {},
            timeoutMs: deps.timeoutMs,
            maxBytes: MAX_UPSTREAM_ANSWER_BYTES,
            validator,
          };
          try {
            const answer = await statelessCall(post, wire, call);
            return answer.kind === 'error' ? answer : answerOf(answer.result);
          } catch (err) {
            throwIfRefused(wire, ownerOf(url, token));
            throw err;
          }
        }
        return await withClient(
          url,
          token,
          wire,
          async (client, headers) => {
            try {
              const result = await client.callTool(params, {
                timeout: sdkTimeout,
                toolDefinition: definition as never,
                allowInputRequired: true,
                headers,
              });
              return answerOf(result as Record<string, unknown>);
            } catch (err) {
              // A JSON-RPC error is the upstream's answer (on 200 or a 4xx of its own): it did not run the tool.
              // (Not a 404: that is a 2025-11-25 session the upstream ended, answered by initialising again.)
              if (
                err instanceof ProtocolError &&
                wire.failure === undefined &&
                wire.status !== 401 &&
                wire.status !== 404
              )
                return { kind: 'error', code: err.code, message: err.message };
              throw err;
            }
          },
          elicitation,
          options.ask,
        );
      } catch (err) {
        if (err instanceof UpstreamUnauthorizedError) throw err;
        // Refused before it was sent (connecting, or the call itself), or answered 4xx: not done there.
        if (!wire.sent || (wire.status !== undefined && wire.status >= 400 && wire.status < 500))
          throw new UpstreamUnreachableError(
            `The upstream MCP server could not be asked (${describe(wire.failure ?? err)}).`,
            {
              cause: err,
            },
          );
        throw new OutcomeUnknownError(
          `${name} was sent to the upstream MCP server, which ${describe(wire.failure ?? err)}.`,
          {
            cause: err,
          },
        );
      }
    },
  };
}

export type UpstreamMcp = ReturnType<typeof createUpstreamMcp>;

/** A tools/call result as the broker relays it: input_required (nothing done yet), or the tool's result. */
function answerOf(answer: Record<string, unknown>): UpstreamCallAnswer {
  if (isInputRequired(answer))
    return {
      kind: 'input_required',
      inputRequests: (answer['inputRequests'] ?? {}) as Record<string, unknown>,
      requestState: typeof answer['requestState'] === 'string' ? answer['requestState'] : undefined,
    };
  return { kind: 'result', result: answer };
}

/** Why a request failed, in words for the model and the operator (no URL, no token). */
function describe(err: unknown): string {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'did not answer in time';
    if (e instanceof FetchRefusedError) return 'answered more than the broker reads, or a redirect';
    const code = (e as { code?: unknown }).code;
    if (code === 'ECONNREFUSED') return 'refused the connection';
    if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'closed the connection';
  }
  return 'gave no answer the broker can read';
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
