import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { Queryable } from '../db/pool.js';
import { fromStatesOf, toStateOf, type ConnectionEvent, type ConnectionState } from './connectionStates.js';

/** A connection's record beside its tokens (migrations/0011_connections.sql): never a token. */
export interface ConnectionRecord {
  id: string;
  subject: Principal;
  provider: string;
  /** Who the user is at the provider (ID token `sub`, or the provider's identity call); undefined for connections made before it was recorded, and where it cannot be known (an upstream MCP server). */
  upstreamSubject: string | undefined;
  /** The provider's name for that account (GitHub `login`), where its identity answer has one. */
  upstreamName: string | undefined;
  /** What the provider granted (its token response's `scope`, or the scopes asked for where it names none, RFC 6749 §5.1). */
  grantedScopes: readonly string[];
  /** Connection facts the provider returned (Slack `team.id`), keyed by their path in its answer. */
  metadata: Readonly<Record<string, string>>;
  /** This connection's own API base (Salesforce `instance_url`); the provider's applies where undefined. */
  apiBase: string | undefined;
  navigationId: string | undefined;
  connectedAt: Date;
  state: ConnectionState;
  /** Bumped by every change: the compare-and-set every move goes through. */
  version: number;
  /** While `refreshing`: until when the instance refreshing it holds the lease. */
  leaseUntil: Date | undefined;
  lastUsedAt: Date | undefined;
}

export type ConnectionWrite = Omit<
  ConnectionRecord,
  'id' | 'connectedAt' | 'state' | 'version' | 'leaseUntil' | 'lastUsedAt'
>;

interface Row {
  id: string;
  subject_iss: string;
  subject_sub: string;
  provider: string;
  upstream_subject: string | null;
  upstream_name: string | null;
  granted_scopes: string[];
  metadata: Record<string, string>;
  api_base: string | null;
  navigation_id: string | null;
  connected_at: Date;
  state: ConnectionState;
  version: string;
  lease_until: Date | null;
  last_used_at: Date | null;
}

const fromRow = (r: Row): ConnectionRecord => ({
  id: r.id,
  subject: { iss: r.subject_iss, sub: r.subject_sub },
  provider: r.provider,
  upstreamSubject: r.upstream_subject ?? undefined,
  upstreamName: r.upstream_name ?? undefined,
  grantedScopes: r.granted_scopes,
  metadata: r.metadata,
  apiBase: r.api_base ?? undefined,
  navigationId: r.navigation_id ?? undefined,
  connectedAt: r.connected_at,
  state: r.state,
  version: Number(r.version),
  leaseUntil: r.lease_until ?? undefined,
  lastUsedAt: r.last_used_at ?? undefined,
});

/**
 * Records (subject, provider)'s connection in the caller's transaction: a
 * reconnect replaces every fact of the previous one, keeps its id, and makes it
 * active (the callback stores the new token set in the same transaction).
 */
export async function upsertConnection(db: Queryable, c: ConnectionWrite, now: Date): Promise<ConnectionRecord> {
  const { rows } = await db.query<Row>(
    `INSERT INTO connections (id, subject_iss, subject_sub, provider, upstream_subject, upstream_name, granted_scopes, metadata, api_base, navigation_id, connected_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
     ON CONFLICT (subject_iss, subject_sub, provider) DO UPDATE
        SET upstream_subject = EXCLUDED.upstream_subject, upstream_name = EXCLUDED.upstream_name, granted_scopes = EXCLUDED.granted_scopes,
            metadata = EXCLUDED.metadata, api_base = EXCLUDED.api_base, navigation_id = EXCLUDED.navigation_id,
            connected_at = EXCLUDED.connected_at, updated_at = EXCLUDED.updated_at,
            state = 'active', lease_until = NULL, version = connections.version + 1
     RETURNING *`,
    [
      randomUUID(),
      c.subject.iss,
      c.subject.sub,
      c.provider,
      c.upstreamSubject ?? null,
      c.upstreamName ?? null,
      [...c.grantedScopes],
      JSON.stringify(c.metadata),
      c.apiBase ?? null,
      c.navigationId ?? null,
      now,
    ],
  );
  return fromRow(rows[0]!);
}

export async function findConnection(
  db: Queryable,
  subject: Principal,
  provider: string,
): Promise<ConnectionRecord | undefined> {
  const { rows } = await db.query<Row>(
    'SELECT * FROM connections WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3',
    [subject.iss, subject.sub, provider],
  );
  return rows[0] && fromRow(rows[0]);
}

/** Every connection of `subject`, whatever its state, by provider: what the user's connections page lists. */
export async function findConnectionsOf(db: Queryable, subject: Principal): Promise<ConnectionRecord[]> {
  const { rows } = await db.query<Row>(
    'SELECT * FROM connections WHERE subject_iss = $1 AND subject_sub = $2 ORDER BY provider',
    [subject.iss, subject.sub],
  );
  return rows.map(fromRow);
}

/**
 * Applies `event` to a connection if the table allows it from the state it is in now (and, given
 * `version`, only if nobody changed it since): one compare-and-set statement, no lock held after it.
 * `leaseUntil` is required for `refresh_started`. Returns the moved record, or undefined when the move
 * did not apply.
 */
export async function moveConnection(
  db: Queryable,
  move: { id: string; event: ConnectionEvent; now: Date; version?: number; leaseUntil?: Date },
): Promise<ConnectionRecord | undefined> {
  const to = toStateOf(move.event);
  const { rows } = await db.query<Row>(
    `UPDATE connections
        SET state = $2, version = version + 1, updated_at = $4,
            lease_until = CASE WHEN $2 = 'refreshing' THEN $5::timestamptz END
      WHERE id = $1 AND state = ANY($3) AND ($6::bigint IS NULL OR version = $6)
        -- A lease is taken over only once its time ran out.
        AND ($2 <> 'refreshing' OR state <> 'refreshing' OR lease_until < $4)
      RETURNING *`,
    [move.id, to, fromStatesOf(move.event), move.now, move.leaseUntil ?? null, move.version ?? null],
  );
  return rows[0] && fromRow(rows[0]);
}

/** Notes a call made through the connection (for the connections page), at most once a minute per connection. */
export async function touchConnection(db: Queryable, id: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE connections SET last_used_at = $2
      WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '1 minute')`,
    [id, now],
  );
}

/**
 * Active connections whose access token expires before `before` and which hold a refresh token,
 * soonest first, at most `limit`: what the proactive refresh renews. No row is locked: the refresh
 * lease (moveConnection's compare-and-set) is the claim, so two instances never renew one twice.
 */
export async function findExpiringConnections(
  db: Queryable,
  before: Date,
  limit: number,
): Promise<{ subject: Principal; provider: string }[]> {
  const { rows } = await db.query<{ subject_iss: string; subject_sub: string; provider: string }>(
    `SELECT c.subject_iss, c.subject_sub, c.provider
       FROM connections c
       JOIN secrets a ON a.subject_iss = c.subject_iss AND a.subject_sub = c.subject_sub
                     AND a.provider = c.provider AND a.kind = 'access_token'
      WHERE c.state = $3 AND a.expires_at < $1
        AND EXISTS (SELECT 1 FROM secrets r
                     WHERE r.subject_iss = c.subject_iss AND r.subject_sub = c.subject_sub
                       AND r.provider = c.provider AND r.kind = 'refresh_token')
      ORDER BY a.expires_at
      LIMIT $2`,
    [before, limit, 'active' satisfies ConnectionState],
  );
  return rows.map((r) => ({ subject: { iss: r.subject_iss, sub: r.subject_sub }, provider: r.provider }));
}

/** One connection by its id, whoever it belongs to (callers acting for a user check the subject). */
export async function findConnectionById(db: Queryable, id: string): Promise<ConnectionRecord | undefined> {
  const { rows } = await db.query<Row>('SELECT * FROM connections WHERE id = $1', [id]);
  return rows[0] && fromRow(rows[0]);
}

/** Which connections an operator lists: by the user's `sub` (any issuer), provider and state, each optional. */
export interface ConnectionFilter {
  subject?: string | undefined;
  provider?: string | undefined;
  state?: ConnectionState | undefined;
  limit: number;
}

/** Connections matching `filter`, the most recently connected first, at most `limit`: never a token. */
export async function listConnections(db: Queryable, filter: ConnectionFilter): Promise<ConnectionRecord[]> {
  const { rows } = await db.query<Row>(
    `SELECT * FROM connections
      WHERE ($1::text IS NULL OR subject_sub = $1) AND ($2::text IS NULL OR provider = $2)
        AND ($3::text IS NULL OR state = $3)
      ORDER BY connected_at DESC, id
      LIMIT $4`,
    [filter.subject ?? null, filter.provider ?? null, filter.state ?? null, filter.limit],
  );
  return rows.map(fromRow);
}
