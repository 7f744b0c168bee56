import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Principal } from '../../auth/principal.js';
import { sessionEnded } from '../toMcp.js';
import type { ClientCapabilities, RequestId } from '../protocol.js';
import { errorMember } from '../rpcMessages.js';
import type { LegacyLimits } from '../../config/limits.js';

export { LEGACY_VERSION } from '../protocol.js';

/** A 2025-11-25 session: what `initialize` declared, held by this instance only (session affinity). */
export interface LegacySession {
  id: string;
  principal: Principal;
  capabilities: ClientCapabilities;
  lastSeenAt: number;
  /** The standalone GET stream, if the client opened one. */
  stream: ServerResponse | undefined;
  /** The client closed its GET stream (we did not end it) and has not opened another. */
  streamDropped: boolean;
  /** POSTs of this session whose response is still open (calls in progress). */
  inFlight: number;
  /** Server-to-client requests (elicitation/create) waiting for the client's response. */
  pending: Map<RequestId, (message: Record<string, unknown>) => void>;
  /** Elicitations this session was told are complete (at most once each). */
  notified: Set<string>;
  /** -32042 completion watchers, oldest first; each stops when its controller aborts. */
  watchers: Map<string, AbortController>;
  nextRequestId: number;
  /** The tool names this session was last listed (tools/list), to tell it when its list changes. */
  listed: string | undefined;
  /** Set when the session ends (DELETE, idle, shutdown): work still in flight must not continue or accept anything. */
  ended: boolean;
  /** Aborts when the session ends: its streams close and its waits stop. */
  closing: AbortSignal;
}

export type CreateResult = { session: LegacySession } | { refused: string };

export interface LegacySessions {
  /** A new session, or why none can be opened now (a cap is reached). */
  create(principal: Principal, capabilities: ClientCapabilities): CreateResult;
  /** The live session for this id and principal; another principal's session is treated as unknown. */
  find(id: string, principal: Principal): LegacySession | undefined;
  end(session: LegacySession): void;
  size(): number;
  /** Stops the idle sweep and ends every session (shutdown). */
  close(): void;
}

const principalKey = (p: Principal) => `${p.iss}\n${p.sub}`;

/**
 * In-memory sessions, one map per instance (the legacy protocol needs
 * affinity: the session lives where it was created), bounded in all and per principal. A timer ends
 * sessions idle past `idleMs`, with their streams and pending calls.
 */
export function createLegacySessions(limits: LegacyLimits, now: () => number = Date.now): LegacySessions {
  const sessions = new Map<string, LegacySession & { abort: AbortController }>();
  const perPrincipal = new Map<string, number>();
  const minutes = (ms: number) => Math.max(1, Math.round(ms / 60_000));

  const end = (session: LegacySession) => {
    const held = sessions.get(session.id);
    if (!held || held !== session) return;
    session.ended = true;
    sessions.delete(session.id);
    const key = principalKey(session.principal);
    const left = (perPrincipal.get(key) ?? 1) - 1;
    if (left > 0) perPrincipal.set(key, left);
    else perPrincipal.delete(key);
    held.abort.abort();
    session.stream?.end();
    for (const resolve of session.pending.values()) resolve({ error: errorMember(sessionEnded('session ended')) });
    session.pending.clear();
    for (const watcher of session.watchers.values()) watcher.abort();
    session.watchers.clear();
  };

  // A client that dropped its GET stream, with nothing in progress: most likely a process that
  // exited without DELETE (host bridges do). At a cap, the least recently seen such session is
  // ended to make room rather than locking its user out until the idle sweep; a live client that
  // was only between streams gets 404 and initializes again (2025-11-25 session management).
  const endAbandoned = (principal?: Principal): boolean => {
    let oldest: LegacySession | undefined;
    for (const s of sessions.values()) {
      if (principal && principalKey(s.principal) !== principalKey(principal)) continue;
      if (s.stream || !s.streamDropped || s.inFlight > 0) continue;
      if (!oldest || s.lastSeenAt < oldest.lastSeenAt) oldest = s;
    }
    if (oldest) end(oldest);
    return oldest !== undefined;
  };

  const sweepIdle = () => {
    const t = now();
    for (const s of [...sessions.values()]) if (t - s.lastSeenAt > limits.idleMs) end(s);
  };
  const timer = setInterval(sweepIdle, Math.max(50, Math.min(limits.idleMs / 2, 60_000)));
  timer.unref();

  return {
    create(principal, capabilities) {
      sweepIdle();
      const key = principalKey(principal);
      if ((perPrincipal.get(key) ?? 0) >= limits.maxSessionsPerPrincipal && !endAbandoned(principal)) {
        return {
          refused: `You have ${limits.maxSessionsPerPrincipal} open sessions, the most allowed: end one (HTTP DELETE with its Mcp-Session-Id) or reuse it; idle sessions end after ${minutes(limits.idleMs)} min.`,
        };
      }
      if (sessions.size >= limits.maxSessions && !endAbandoned())
        return { refused: 'This server has as many open sessions as it allows. Try again in a few minutes.' };
      const abort = new AbortController();
      // Visible ASCII, globally unique, cryptographically secure (2025-11-25 transport rules).
      const session = {
        id: randomBytes(24).toString('base64url'),
        principal,
        capabilities,
        lastSeenAt: now(),
        stream: undefined,
        streamDropped: false,
        inFlight: 0,
        pending: new Map(),
        notified: new Set<string>(),
        watchers: new Map<string, AbortController>(),
        nextRequestId: 1,
        listed: undefined,
        ended: false,
        closing: abort.signal,
        abort,
      };
      sessions.set(session.id, session);
      perPrincipal.set(key, (perPrincipal.get(key) ?? 0) + 1);
      return { session };
    },
    find(id, principal) {
      const session = sessions.get(id);
      if (!session || session.principal.iss !== principal.iss || session.principal.sub !== principal.sub)
        return undefined;
      session.lastSeenAt = now();
      return session;
    },
    end,
    size: () => sessions.size,
    close() {
      clearInterval(timer);
      for (const s of [...sessions.values()]) end(s);
    },
  };
}
