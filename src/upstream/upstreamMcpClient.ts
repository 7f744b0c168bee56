import { createHash } from 'node:crypto';
import {
  Client,
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

export interface UpstreamMcpDeps {
  /** The broker's fetch (its CAs, no TLS shortcut). */
  fetch: Fetch;
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
}

/** The upstream could not be asked (refused the connection, no such host, its certificate): nothing was done there. */
export class UpstreamUnreachableError extends UnavailableError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, expose: true });
  }
}

// An upstream's answer is relayed to the host whole: bounded like any document the broker reads.
export const MAX_UPSTREAM_ANSWER_BYTES = 2 * 1024 * 1024;

// Socket errors that happen before a request leaves: the upstream never saw it.
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

type Elicitation = { form?: Record<string, never>; url?: Record<string, never> };

interface Session {
  client: Client;
  transport: StreamableHTTPClientTransport;
  wire: Wire;
  usedAt: number;
}

// 2025-11-25 sessions kept per (upstream, token), each ended after this long unused.
const MAX_SESSIONS = 1_000;
const SESSION_IDLE_MS = 5 * 60_000;

interface Wire {
  /** The first failure the fetch saw, or the status of a refused answer. */
  failure: unknown;
  status: number | undefined;
  /** Whether a request may have reached the upstream. */
  sent: boolean;
}

/**
 * The official SDK client (`@modelcontextprotocol/client`) on one upstream MCP server, stateless
 * 2026-07-28 or a 2025-11-25 session per (upstream, user), speaking for one user: their upstream access token as the bearer (never the host's),
 * the broker's fetch with a deadline on each request, its answer bounded, no redirect followed
 * (the URL was checked by the URL policy when the entry was read, and a redirect would leave it).
 */
export function createUpstreamMcp(deps: UpstreamMcpDeps) {
  // The SDK's own deadline comes after the fetch's, so the fetch's failure is the one that explains it.
  const sdkTimeout = deps.timeoutMs + 500;
  // What each upstream speaks, learnt at its first connection: 2026-07-28 (stateless), or
  // 2025-11-25, whose sessions (initialize, Mcp-Session-Id) are kept per (upstream, user's token).
  const eras = new Map<string, ProtocolEra>();
  const sessions = new Map<string, Session>();

  function open(url: string, token: string, era: ProtocolEra | undefined, elicitation?: Elicitation): Session {
    const wire: Wire = { failure: undefined, status: undefined, sent: false };
    const bounded = strictFetch(deps.fetch, { maxBytes: MAX_UPSTREAM_ANSWER_BYTES });
    const fetch: FetchLike = async (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token}`);
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
    const client = new Client(deps.clientInfo, {
      // Unknown yet: server/discover first, then initialize if the upstream is a 2025-11-25 one.
      versionNegotiation: { mode: era === 'legacy' ? 'legacy' : era === 'modern' ? { pin: MODERN_VERSION } : 'auto' },
      ...(era === 'legacy' && { supportedProtocolVersions: [LEGACY_VERSION] }),
      // A 2025-11-25 session would bring server-to-client requests, which the broker does not relay: nothing declared there.
      capabilities: era === 'modern' && elicitation ? { elicitation } : {},
      inputRequired: { autoFulfill: false },
    });
    return { client, transport: new StreamableHTTPClientTransport(new URL(url), { fetch }), wire, usedAt: Date.now() };
  }

  async function withClient<T>(
    url: string,
    token: string,
    run: (client: Client, wire: Wire) => Promise<T>,
    elicitation?: Elicitation,
  ) {
    const key = `${url}\n${createHash('sha256').update(token).digest('base64url')}`;
    const kept = sessions.get(key);
    if (kept) {
      sessions.delete(key);
      try {
        return await runOn(kept, run, key);
      } catch (err) {
        // 404: the upstream ended the session (MCP 2025-11-25, Session Management) and did nothing
        // with the request: initialise again, once, and send it on the new session.
        if (kept.wire.status !== 404) throw err;
        await kept.client.close().catch(() => undefined);
      }
    }
    const fresh = open(url, token, eras.get(url), elicitation);
    try {
      await fresh.client.connect(fresh.transport, { timeout: sdkTimeout });
    } catch (err) {
      await fresh.client.close().catch(() => undefined);
      if (fresh.wire.status === 401)
        throw new UpstreamUnauthorizedError('The upstream MCP server refused the access token.');
      throw err;
    }
    const era = fresh.client.getProtocolEra();
    if (era) eras.set(url, era);
    return runOn(fresh, run, key);
  }

  /** Runs on a connected client; a 2025-11-25 session is kept for the next call, anything else closed. */
  async function runOn<T>(session: Session, run: (client: Client, wire: Wire) => Promise<T>, key: string) {
    const { client, wire } = session;
    wire.failure = undefined;
    wire.status = undefined;
    wire.sent = false;
    let keep = false;
    try {
      const result = await run(client, wire);
      keep = client.getProtocolEra() === 'legacy';
      return result;
    } catch (err) {
      if (wire.status === 401) throw new UpstreamUnauthorizedError('The upstream MCP server refused the access token.');
      throw err;
    } finally {
      if (keep) keepSession(key, session);
      else if (!(session.wire.status === 404)) await client.close().catch(() => undefined);
    }
  }

  function keepSession(key: string, session: Session): void {
    const now = Date.now();
    session.usedAt = now;
    sessions.set(key, session);
    // Idle ones end, and the oldest go first past the bound (a Map iterates in insertion order).
    for (const [k, s] of sessions)
      if (sessions.size > MAX_SESSIONS || now - s.usedAt > SESSION_IDLE_MS) {
        sessions.delete(k);
        void s.client.close().catch(() => undefined);
      } else break;
  }

  return {
    /** The user's tools/list at the upstream, every page. */
    async listTools(url: string, token: string): Promise<UpstreamToolList> {
      try {
        return await withClient(url, token, async (client) => {
          const listed = (await client.listTools(undefined, { timeout: sdkTimeout, cacheMode: 'bypass' })) as {
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
      let wireSeen: Wire | undefined;
      try {
        return await withClient(
          url,
          token,
          async (client, wire) => {
            wireSeen = wire;
            // The call's own wire state: connecting sent nothing that does anything.
            wire.sent = false;
            wire.failure = undefined;
            wire.status = undefined;
            try {
              const result = await client.callTool(
                {
                  name,
                  arguments: args,
                  ...(options.inputResponses !== undefined && { inputResponses: options.inputResponses }),
                  ...(options.requestState !== undefined && { requestState: options.requestState }),
                },
                { timeout: sdkTimeout, toolDefinition: definition as never, allowInputRequired: true },
              );
              const answer = result as Record<string, unknown>;
              if (answer['resultType'] === 'input_required' || 'inputRequests' in answer || 'requestState' in answer)
                return {
                  kind: 'input_required',
                  inputRequests: (answer['inputRequests'] ?? {}) as Record<string, unknown>,
                  requestState: typeof answer['requestState'] === 'string' ? answer['requestState'] : undefined,
                };
              return { kind: 'result', result: answer };
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
        );
      } catch (err) {
        if (err instanceof UpstreamUnauthorizedError) throw err;
        const wire = wireSeen;
        // Refused before it was sent (connecting, or the call itself), or answered 4xx: not done there.
        if (!wire || !wire.sent || (wire.status !== undefined && wire.status >= 400 && wire.status < 500))
          throw new UpstreamUnreachableError(
            `The upstream MCP server could not be asked (${describe(wire?.failure ?? err)}).`,
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

function notSent(err: unknown): boolean {
  if (err instanceof FetchRefusedError) return false;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (
      typeof code === 'string' &&
      (NOT_SENT.has(code) || /^(ERR_TLS|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(code))
    )
      return true;
  }
  return false;
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
