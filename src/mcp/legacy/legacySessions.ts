import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Principal } from '../../auth/principal.js';
import type { ClientCapabilities, RequestId } from '../protocol.js';

export { LEGACY_VERSION } from '../protocol.js';

/** A 2025-11-25 session: what `initialize` declared, held by this instance only (session affinity). */
export interface LegacySession {
  id: string;
  principal: Principal;
  capabilities: ClientCapabilities;
  lastSeenAt: number;
  /** The standalone GET stream, if the client opened one. */
  stream: ServerResponse | undefined;
  /** Server-to-client requests (elicitation/create) waiting for the client's response. */
  pending: Map<RequestId, (message: Record<string, unknown>) => void>;
  /** Elicitations this session was told are complete (at most once each). */
  notified: Set<string>;
  nextRequestId: number;
  /** Set by DELETE: work still in flight for this session must not continue or accept anything. */
  ended: boolean;
}

const IDLE_MS = 60 * 60 * 1000;

export interface LegacySessions {
  create(principal: Principal, capabilities: ClientCapabilities): LegacySession;
  /** The live session for this id and principal; another principal's session is treated as unknown. */
  find(id: string, principal: Principal): LegacySession | undefined;
  end(session: LegacySession): void;
  size(): number;
}

/** In-memory sessions, one map per instance (the legacy protocol needs affinity, design §11). */
export function createLegacySessions(now: () => number = Date.now): LegacySessions {
  const sessions = new Map<string, LegacySession>();
  const sweep = () => {
    for (const [id, s] of sessions) if (now() - s.lastSeenAt > IDLE_MS) sessions.delete(id);
  };
  return {
    create(principal, capabilities) {
      sweep();
      // Visible ASCII, globally unique, cryptographically secure (2025-11-25 transport rules).
      const session: LegacySession = { id: randomBytes(24).toString('base64url'), principal, capabilities, lastSeenAt: now(), stream: undefined, pending: new Map(), notified: new Set(), nextRequestId: 1, ended: false };
      sessions.set(session.id, session);
      return session;
    },
    find(id, principal) {
      const session = sessions.get(id);
      if (!session || session.principal.iss !== principal.iss || session.principal.sub !== principal.sub) return undefined;
      session.lastSeenAt = now();
      return session;
    },
    end(session) {
      session.ended = true;
      sessions.delete(session.id);
      session.stream?.end();
      for (const resolve of session.pending.values()) resolve({ error: { code: -32000, message: 'session ended' } });
      session.pending.clear();
    },
    size: () => sessions.size,
  };
}
