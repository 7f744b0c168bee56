import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../../auth/principal.js';
import type { Config } from '../../config/config.js';
import { findNavigationById } from '../../broker/navigationRepo.js';
import { State } from '../../flow/navigationStates.js';
import { z } from 'zod';
import {
  invalidParams,
  invalidRequest,
  McpProtocolError,
  methodNotFound,
  tooManySessions,
  unknownSession,
} from '../toMcp.js';
import type { Logger } from '../../shared/logger.js';
import type { ToolContext } from '../defineTool.js';
import type { ClientCapabilities, RequestId } from '../protocol.js';
import { errorMessage, notificationMessage, resultMessage, sseMessage } from '../rpcMessages.js';
import { legacyToolCall, type LegacyToolDeps } from './legacyTools.js';
import { createLegacySessions, LEGACY_VERSION, type LegacySession } from './legacySessions.js';
import { createRequestChannel, type RequestChannel } from './requestChannel.js';
import { openSse } from './sseStream.js';
import type { VerifiedBearer } from '../mcpAuth.js';
import { markRequest } from '../../telemetry/spans.js';
import { resultOutcome } from '../../telemetry/mcpRequestSpan.js';

/** The legacy slice of the configuration (LEGACY_*) as loadConfig parsed it. */
type LegacySettings = Config['legacy'];

export interface LegacyEndpointDeps extends LegacyToolDeps, LegacySettings {
  serverInfo: { name: string; version: string };
  logger: Logger;
}

export interface LegacyEndpoint {
  post(
    req: IncomingMessage,
    res: ServerResponse,
    message: Record<string, unknown>,
    caller: VerifiedBearer,
    requestId: string,
  ): Promise<void>;
  get(req: IncomingMessage, res: ServerResponse, caller: VerifiedBearer): void;
  delete(req: IncomingMessage, res: ServerResponse, caller: VerifiedBearer): void;
  /** Ends every session (their streams and pending calls) and stops the idle sweep. */
  close(): void;
  /** Settles when the tool calls still running have finished, or after `timeoutMs`. */
  idle(timeoutMs: number): Promise<void>;
}

/** Is this a 2025-11-25 message? `initialize` without a modern envelope, a session's traffic, or a client's response. */
export function isLegacyMessage(
  message: unknown,
  headers: IncomingMessage['headers'],
): message is Record<string, unknown> {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return false;
  const m = message as Record<string, unknown>;
  const params = m['params'] as Record<string, unknown> | undefined;
  const modern =
    typeof params === 'object' &&
    params !== null &&
    typeof params['_meta'] === 'object' &&
    params['_meta'] !== null &&
    'io.modelcontextprotocol/protocolVersion' in (params['_meta'] as object);
  if (modern) return false;
  return m['method'] === 'initialize' || headers['mcp-session-id'] !== undefined || 'result' in m || 'error' in m;
}

function sendJson(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res
    .writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers })
    .end(text);
}

// Loose objects: a client may add members (MCP's extension points); the ones read must have their types.
const InitializeParams = z.object({
  protocolVersion: z.string().max(64),
  capabilities: z.record(z.string(), z.unknown()),
  clientInfo: z.object({ name: z.string().max(256), version: z.string().max(256) }),
});

/** A refusal of the session layer, with its own status (mcp/toMcp.ts). */
function refuse(
  res: ServerResponse,
  id: RequestId | null,
  err: McpProtocolError,
  headers: Record<string, string> = {},
): void {
  sendJson(res, err.httpStatus, errorMessage(id, err), headers);
}

/**
 * The 2025-11-25 adapter, isolated from the modern handler: it
 * owns sessions (initialize, Mcp-Session-Id, 400 when missing, 404 when
 * unknown, DELETE), the standalone GET stream and server-to-client requests
 * on a POST's SSE stream; it calls the same use cases.
 */
export function createLegacyEndpoint(deps: LegacyEndpointDeps): LegacyEndpoint {
  const { limits } = deps;
  const sessions = createLegacySessions(limits);

  function sessionOf(
    req: IncomingMessage,
    res: ServerResponse,
    principal: Principal,
    id: RequestId | null,
  ): LegacySession | undefined {
    const header = req.headers['mcp-session-id'];
    if (typeof header !== 'string' || header === '') {
      refuse(res, id, invalidRequest('Mcp-Session-Id header is required: call initialize first'));
      return undefined;
    }
    const session = sessions.find(header, principal);
    if (!session) {
      refuse(res, id, unknownSession('Unknown or ended session: initialize again'));
      return undefined;
    }
    const version = req.headers['mcp-protocol-version'];
    if (version !== undefined && version !== LEGACY_VERSION) {
      refuse(res, id, invalidRequest(`MCP-Protocol-Version must be ${LEGACY_VERSION} on this session`));
      return undefined;
    }
    return session;
  }

  // Tool calls still running: a stop lets them finish (their sessions ended, they return soon) before the pool closes.
  const calls = new Set<Promise<unknown>>();
  return {
    async post(req, res, message, { principal, clientId }, requestId) {
      const raw = message['id'];
      // A JSON-RPC id is a string or an integer; anything else is echoed as null.
      const id: RequestId | null =
        typeof raw === 'string' || (typeof raw === 'number' && Number.isInteger(raw)) ? raw : null;
      const params = (
        typeof message['params'] === 'object' && message['params'] !== null ? message['params'] : {}
      ) as Record<string, unknown>;
      if (message['method'] === 'initialize') {
        if (id === null) return refuse(res, null, invalidRequest('initialize is a request: it needs an id'));
        // What a session is made from is parsed before one is made (2025-11-25 lifecycle, InitializeRequest).
        const init = InitializeParams.safeParse(message['params']);
        if (!init.success)
          return refuse(
            res,
            id,
            invalidParams('initialize needs params with protocolVersion, capabilities and clientInfo {name, version}'),
          );
        const created = sessions.create(principal, init.data.capabilities as ClientCapabilities);
        if ('refused' in created) return refuse(res, id, tooManySessions(created.refused), { 'Retry-After': '60' });
        // We speak one legacy version; a client asking for another gets ours (2025-11-25 lifecycle).
        // With upstream MCP servers, a user's list changes when they connect one (tellListChanged).
        const tools = deps.tools.fixed ? {} : { listChanged: true };
        const result = { protocolVersion: LEGACY_VERSION, capabilities: { tools }, serverInfo: deps.serverInfo };
        return sendJson(res, 200, resultMessage(id, JSON.stringify(result)), { 'Mcp-Session-Id': created.session.id });
      }
      const session = sessionOf(req, res, principal, id);
      if (!session) return;
      if ('result' in message || 'error' in message) {
        const waiting = id === null ? undefined : session.pending.get(id);
        if (waiting) waiting(message);
        else deps.logger.info({ requestId, responseId: id }, 'legacy client response matched no pending request');
        res.writeHead(202, { 'Mcp-Session-Id': session.id }).end();
        return;
      }
      if (id === null) {
        res.writeHead(202, { 'Mcp-Session-Id': session.id }).end();
        return;
      }
      const method = message['method'];
      session.inFlight++;
      res.once('close', () => session.inFlight--);
      const channel = createRequestChannel(res, session, id, limits.heartbeatMs);
      try {
        if (method === 'ping') return channel.finish(resultMessage(id, '{}'));
        if (method === 'tools/list') {
          const { tools } = await deps.tools.list(principal);
          session.listed = namesOf(tools);
          return channel.finish(resultMessage(id, JSON.stringify({ tools })));
        }
        // A call's errors travel in its response (200, or its stream), whatever their HTTP status on the modern wire.
        if (method !== 'tools/call')
          return channel.finish(errorMessage(id, methodNotFound(`Method not found: ${String(method).slice(0, 64)}`)));
        const ctx: ToolContext = {
          principal,
          clientId,
          capabilities: session.capabilities,
          inputResponses: undefined,
          requestState: undefined,
          requestId,
          logger: deps.logger,
        };
        const running = legacyToolCall(deps, session, id, params, ctx, channel);
        calls.add(running);
        const result = await running.finally(() => calls.delete(running));
        markRequest({}, resultOutcome(result));
        await tellListChanged(deps.tools, session, principal, params['name'], channel);
        return channel.finish(resultMessage(id, JSON.stringify(result)));
      } catch (err) {
        if (!(err instanceof McpProtocolError)) throw err;
        markRequest({ 'rpc.jsonrpc.error_code': err.code }, 'rpc_error');
        if (err.kind === 'urlElicitationRequired')
          watchForCompletion(deps, session, err.data, limits.watchersPerSession);
        return channel.finish(errorMessage(id, err));
      }
    },

    get(req, res, { principal }) {
      const session = sessionOf(req, res, principal, null);
      if (!session) return;
      session.stream?.end();
      session.stream = res;
      session.streamDropped = false;
      openSse(res, {
        sessionId: session.id,
        heartbeatMs: limits.heartbeatMs,
        maxLifetimeMs: limits.streamMaxMs,
        closing: session.closing,
      });
      res.write(': stream open\n\n');
      res.on('close', () => {
        if (session.stream !== res) return;
        session.stream = undefined;
        // Closed before we ended it: the client went away (or is between streams).
        session.streamDropped = !res.writableEnded;
      });
    },

    delete(req, res, { principal }) {
      const session = sessionOf(req, res, principal, null);
      if (!session) return;
      sessions.end(session);
      res.writeHead(204).end();
    },

    close: () => sessions.close(),
    async idle(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([Promise.allSettled([...calls]), bound]);
      clearTimeout(timer);
    },
  };
}

/**
 * After a -32042, tell the session's GET stream when the callback is verified (at most once, only
 * this session). At most `max` watchers per session (past it the oldest stops: the notification is
 * a courtesy, the host may retry anyway), and all stop when the session ends.
 */
function watchForCompletion(deps: LegacyEndpointDeps, session: LegacySession, data: unknown, max: number): void {
  const elicitations = (data as { elicitations?: { elicitationId?: string }[] } | undefined)?.elicitations ?? [];
  const { broker } = deps.toolDeps.connection;
  for (const { elicitationId } of elicitations) {
    if (!elicitationId || session.ended || session.watchers.has(elicitationId)) continue;
    while (session.watchers.size >= max) {
      const [oldest, watcher] = session.watchers.entries().next().value!;
      session.watchers.delete(oldest);
      watcher.abort();
    }
    const watcher = new AbortController();
    session.watchers.set(elicitationId, watcher);
    void broker.signal
      .waitFor(
        elicitationId,
        broker.navigationTtlSeconds * 1000,
        async () => (await findNavigationById(broker.pool, elicitationId))?.status === State.REQUIREMENT_VERIFIED,
        watcher.signal,
      )
      .then((verified) => {
        if (!verified || watcher.signal.aborted || session.notified.has(elicitationId) || !session.stream) return;
        session.notified.add(elicitationId);
        session.stream.write(sseMessage(notificationMessage('notifications/elicitation/complete', { elicitationId })));
      })
      .catch((err: unknown) => deps.logger.warn({ err }, 'completion watch failed'))
      .finally(() => {
        if (session.watchers.get(elicitationId) === watcher) session.watchers.delete(elicitationId);
      });
  }
}

const namesOf = (tools: readonly Record<string, unknown>[]): string => tools.map((t) => String(t['name'])).join('\n');

/**
 * After a call of an upstream's tool (its stand-in, or one of a list shown before connecting), which may
 * have connected the user: a session that listed its tools is told, once, on the call's stream, when
 * its list is no longer what it was given (MCP 2025-11-25, tools list changed notification).
 */
async function tellListChanged(
  tools: LegacyEndpointDeps['tools'],
  session: LegacySession,
  principal: Principal,
  name: unknown,
  channel: RequestChannel,
): Promise<void> {
  if (tools.fixed || session.listed === undefined || typeof name !== 'string' || tools.names.includes(name)) return;
  const now = namesOf((await tools.list(principal)).tools);
  if (now === session.listed) return;
  session.listed = now;
  channel.notify('notifications/tools/list_changed', {});
}
