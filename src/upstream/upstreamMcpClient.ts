import { createHash } from 'node:crypto';
import { Client, ProtocolError, StreamableHTTPClientTransport, type ProtocolEra } from '@modelcontextprotocol/client';
import { OutcomeUnknownError } from '../broker/acceptOriginalOperation.js';
import { UpstreamUnauthorizedError } from '../broker/forgetConnection.js';
import { UnavailableError } from '../errors/appError.js';
import { LEGACY_VERSION, MODERN_VERSION } from '../mcp/protocol.js';
import { FetchRefusedError, type Fetch } from '../shared/httpClient.js';
import type { RequestFetch } from '../shared/requestFetch.js';
import { createClientPool, type Kept } from './upstreamClientPool.js';
import { createCallRouting, MAX_UPSTREAM_ANSWER_BYTES, type UpstreamAsk } from './upstreamCallRouting.js';
import { createOutputValidator } from './outputValidator.js';
import { isInputRequired, newWire, plainCall, statelessCall, type UpstreamWire } from './statelessCall.js';

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
  ask?: UpstreamAsk;
}

/** The upstream could not be asked (refused the connection, no such host, its certificate): nothing was done there. */
export class UpstreamUnreachableError extends UnavailableError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, expose: true });
  }
}

type Elicitation = { form?: Record<string, never>; url?: Record<string, never> };

// The "token" of a request sent without one: its clients are kept apart from every user's.
const ANONYMOUS = '';

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
  // The connected clients, and each user's server/discover answer, adopted by their other clients.
  const pool = createClientPool();
  // Which call each request belongs to, and who answers the upstream's questions about it.
  const routing = createCallRouting({ fetch: deps.fetch, timeoutMs: deps.timeoutMs, anonymous: ANONYMOUS });

  const ownerOf = (url: string, token: string) => `${url}\n${createHash('sha256').update(token).digest('base64url')}`;

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
    const scope = routing.clientScope(owner);
    if (era !== 'modern')
      client.setRequestHandler(
        'elicitation/create',
        // The caller's answer is an ElicitResult, checked there (ElicitResultSchema).
        async (request, ctx) =>
          (await routing.answerAsk(scope, request, ctx)) as { action: 'accept' | 'decline' | 'cancel' },
      );
    // Connecting sends nothing that does anything: its wire is the client's own, no call's.
    const wire = newWire();
    const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: routing.fetchFor(token, wire, scope) });
    const prior = era === 'modern' ? pool.discoverOf(owner) : undefined;
    if (prior) pool.remember(owner, prior);
    try {
      await client.connect(transport, {
        timeout: sdkTimeout,
        ...(prior && { prior: { kind: 'modern', discover: prior } }),
      });
    } catch (err) {
      await client.close().catch(() => undefined);
      throwIfRefused(wire, owner);
      throw err;
    }
    const spoken = client.getProtocolEra();
    if (spoken) eras.set(url, spoken);
    const discover = client.getDiscoverResult();
    if (spoken === 'modern' && discover) pool.remember(owner, discover);
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
    pool.replace(entry);
    return entry;
  }

  /** A kept client for (url, token, modes), or a new one: one connection at a time per key. */
  function acquire(url: string, token: string, elicitation?: Elicitation): Promise<Kept> {
    const owner = ownerOf(url, token);
    const key =
      eras.get(url) === 'legacy' ? owner : `${owner}\n${elicitation?.form ? 'f' : ''}${elicitation?.url ? 'u' : ''}`;
    return pool.acquire(key, () => open(url, token, owner, key, elicitation));
  }

  /** A 401 on `wire`: the token was refused, so its clients are dropped and the call ends as UpstreamUnauthorizedError. */
  function throwIfRefused(wire: UpstreamWire, owner: string): void {
    if (wire.status !== 401) return;
    pool.forget(owner);
    throw new UpstreamUnauthorizedError('The upstream MCP server refused the access token.');
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
    ask?: UpstreamAsk,
  ): Promise<T> {
    const tag = routing.newTag();
    for (let attempt = 0; ; attempt++) {
      const entry = await acquire(url, token, elicitation);
      Object.assign(wire, newWire());
      routing.track(tag, wire, ask);
      entry.running++;
      try {
        return await run(entry.client, routing.headersOf(tag));
      } catch (err) {
        throwIfRefused(wire, entry.owner);
        const answered = err instanceof ProtocolError && wire.failure === undefined && wire.status === undefined;
        if (!answered) {
          pool.drop(entry);
          // And what it said it speaks: the next client asks again (it may have changed).
          pool.forgetDiscover(entry.owner);
        }
        if (wire.status === 404 && entry.client.getProtocolEra() === 'legacy' && attempt === 0) continue;
        throw err;
      } finally {
        routing.untrack(tag);
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
