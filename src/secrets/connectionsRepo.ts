import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { statementText, type Alongside, type SqlPart } from '../db/alongside.js';
import type { Queryable } from '../db/pool.js';
import { prepared } from '../db/prepared.js';
import { fromStatesOf, toStateOf, type ConnectionEvent, type ConnectionState } from './connectionStates.js';
import { secretColumnsAs, secretOfJoined, type StoredSecret } from './secretsRepo.js';

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
  /** The authorization server (issuer) the grant came from: its tokens go to no other. Undefined: stored before it was recorded, or a provider with no issuer. */
  issuer?: string | undefined;
  navigationId: string | undefined;
  connectedAt: Date;
  state: ConnectionState;
  /** Bumped by every change: the compare-and-set every move goes through. */
  version: number;
  /** While `refreshing`: until when the instance refreshing it holds the lease. */
  leaseUntil: Date | undefined;
  lastUsedAt: Date | undefined;
  /** The user's default connection to this provider (one per subject and provider): the first made, or the one chosen. */
  preferred: boolean;
  /** Whether the user chose the default ("Make default"), rather than it being the first connection made. */
  preferredChosen: boolean;
}

export type ConnectionWrite = Omit<
  ConnectionRecord,
  'id' | 'connectedAt' | 'state' | 'version' | 'leaseUntil' | 'lastUsedAt' | 'preferred' | 'preferredChosen'
>;

/** How a connection is named to its user: the account's name at the provider, else its id there. */
export const accountLabelOf = (c: Pick<ConnectionRecord, 'upstreamName' | 'upstreamSubject'>): string | undefined =>
  c.upstreamName ?? c.upstreamSubject;

/** The AAD owner of a connection's secrets (sealedTokens.ts). */
export const secretOwnerOf = (c: Pick<ConnectionRecord, 'id' | 'subject' | 'provider'>) => ({
  connectionId: c.id,
  subject: c.subject,
  provider: c.provider,
});

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
  issuer: string | null;
  navigation_id: string | null;
  connected_at: Date;
  state: ConnectionState;
  version: string;
  lease_until: Date | null;
  last_used_at: Date | null;
  preferred: boolean;
  preferred_chosen_at: Date | null;
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
  issuer: r.issuer ?? undefined,
  navigationId: r.navigation_id ?? undefined,
  connectedAt: r.connected_at,
  state: r.state,
  version: Number(r.version),
  leaseUntil: r.lease_until ?? undefined,
  lastUsedAt: r.last_used_at ?? undefined,
  preferred: r.preferred,
  preferredChosen: r.preferred_chosen_at !== null,
});

/**
 * Records a new connection of (subject, provider) for an account it holds no connection to yet, in
 * the caller's transaction: active, and the user's default when it is their first to the provider.
 */
export async function insertConnection(db: Queryable, c: ConnectionWrite, now: Date): Promise<ConnectionRecord> {
  const write = connectionInsertAlongside(randomUUID(), c, now);
  const { rows } = await db.query<Row>(`${statementText(write)} RETURNING *`, write.values);
  return fromRow(rows[0]!);
}

/** insertConnection as a write beside another statement's, with the id the caller chose. */
export function connectionInsertAlongside(id: string, c: ConnectionWrite, now: Date): Alongside {
  return {
    text: (p) =>
      `INSERT INTO connections (id, subject_iss, subject_sub, provider, upstream_subject, upstream_name, granted_scopes, metadata, api_base, navigation_id, issuer, connected_at, updated_at, preferred)
       VALUES (${p(1)}::uuid, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}::text[], ${p(8)}::jsonb, ${p(9)}, ${p(10)}::uuid, ${p(11)}, ${p(12)}::timestamptz, ${p(12)}::timestamptz,
               NOT EXISTS (SELECT 1 FROM connections WHERE subject_iss = ${p(2)} AND subject_sub = ${p(3)} AND provider = ${p(4)} AND preferred))`,
    values: [id, c.subject.iss, c.subject.sub, c.provider, ...factsOf(c), now],
  };
}

/** A connection's facts as the parameters of its columns, in the order both writes name them. */
const factsOf = (c: ConnectionWrite) => [
  c.upstreamSubject ?? null,
  c.upstreamName ?? null,
  [...c.grantedScopes],
  JSON.stringify(c.metadata),
  c.apiBase ?? null,
  c.navigationId ?? null,
  c.issuer ?? null,
];

/**
 * Reconnects connection `id` in place, as a write beside the callback's statement, in its
 * transaction: every fact of the previous grant is replaced, the id and the default flag are kept,
 * and it is active again (its new token set is written beside it too).
 */
export function connectionReplaceAlongside(id: string, c: ConnectionWrite, now: Date): Alongside {
  return {
    text: (p) =>
      `UPDATE connections
          SET upstream_subject = ${p(2)}, upstream_name = ${p(3)}, granted_scopes = ${p(4)}::text[], metadata = ${p(5)}::jsonb,
              api_base = ${p(6)}, navigation_id = ${p(7)}::uuid, issuer = ${p(8)}, connected_at = ${p(9)}::timestamptz, updated_at = ${p(9)}::timestamptz,
              state = ${p(10)}, lease_until = NULL, version = version + 1
        WHERE id = ${p(1)}::uuid`,
    values: [id, ...factsOf(c), now, toStateOf('connected')],
  };
}

/** Every connection of (subject, provider), the default first, then the oldest. */
export async function findConnectionsFor(
  db: Queryable,
  subject: Principal,
  provider: string,
): Promise<ConnectionRecord[]> {
  const { rows } = await db.query<Row>(
    `SELECT * FROM connections WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3
      ORDER BY preferred DESC, connected_at, id`,
    [subject.iss, subject.sub, provider],
  );
  return rows.map(fromRow);
}

/** A connection and its access token's secret, when it has one (read together: one round trip for a call). */
export interface ConnectionWithAccess {
  connection: ConnectionRecord;
  access: StoredSecret | undefined;
}

// Built once: every connected call runs it.
// Named, not c.*: a prepared statement whose result changes shape fails ("cached plan must not change
// result type"), and a migration adding a column must not break instances running the old code.
const CONNECTION_COLUMNS = [
  'id',
  'subject_iss',
  'subject_sub',
  'provider',
  'upstream_subject',
  'upstream_name',
  'granted_scopes',
  'metadata',
  'api_base',
  'navigation_id',
  'connected_at',
  'state',
  'version',
  'lease_until',
  'last_used_at',
  'preferred',
  'preferred_chosen_at',
] as const satisfies readonly (keyof Row)[];

const WITH_ACCESS_SQL = (beside: string) => `SELECT b.beside, ${CONNECTION_COLUMNS.map((c) => `c.${c}`).join(', ')},
        ${secretColumnsAs('s', 'secret_')}
   FROM (SELECT (${beside}) AS beside) b
   LEFT JOIN connections c ON c.subject_iss = $1 AND c.subject_sub = $2 AND c.provider = $3
   LEFT JOIN secrets s ON s.connection_id = c.id AND s.kind = 'access_token'
  ORDER BY c.preferred DESC, c.connected_at, c.id`;

/**
 * findConnectionsFor's connections, in its order, each with its access token's secret, in one
 * statement; with `beside`, a scalar subquery read in the same statement (`beside`: its value, null for none).
 */
export async function findConnectionsWithAccessFor(
  db: Queryable,
  subject: Principal,
  provider: string,
  beside?: SqlPart,
): Promise<{ listed: ConnectionWithAccess[]; beside: unknown }> {
  // Every connected call's first statement: prepared, so Postgres does not plan it on each.
  const { rows } = await db.query<Row & Record<string, unknown>>(
    prepared(WITH_ACCESS_SQL(beside ? beside.text((i) => `$${3 + i}`) : 'NULL'), [
      subject.iss,
      subject.sub,
      provider,
      ...(beside?.values ?? []),
    ]),
  );
  return {
    // No connection: the one row is the subquery's alone.
    listed: rows
      .filter((row) => row.id !== null)
      .map((row) => ({ connection: fromRow(row), access: secretOfJoined(row, 'secret_') })),
    beside: rows[0]?.['beside'] ?? null,
  };
}

/**
 * The user's default connection to `provider` (the one a call uses when it names none and there is
 * nothing to choose between), or undefined when they never connected.
 */
export async function findDefaultConnection(
  db: Queryable,
  subject: Principal,
  provider: string,
): Promise<ConnectionRecord | undefined> {
  return (await findConnectionsFor(db, subject, provider))[0];
}

/**
 * Makes connection `id` the user's chosen default for its provider, in the caller's transaction.
 * Returns it, or undefined when it is not `subject`'s.
 */
export async function choosePreferred(
  db: Queryable,
  subject: Principal,
  id: string,
  now: Date,
): Promise<ConnectionRecord | undefined> {
  // Two statements: the unique index on the default is checked row by row, so the old one goes first.
  const { rows: target } = await db.query<{ provider: string }>(
    'SELECT provider FROM connections WHERE id = $1 AND subject_iss = $2 AND subject_sub = $3 FOR UPDATE',
    [id, subject.iss, subject.sub],
  );
  if (!target[0]) return undefined;
  await db.query(
    `UPDATE connections SET preferred = false, preferred_chosen_at = NULL, version = version + 1, updated_at = $4
      WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3 AND preferred AND id <> $5`,
    [subject.iss, subject.sub, target[0].provider, now, id],
  );
  const { rows } = await db.query<Row>(
    `UPDATE connections SET preferred = true, preferred_chosen_at = $2, version = version + 1, updated_at = $2
      WHERE id = $1 RETURNING *`,
    [id, now],
  );
  return fromRow(rows[0]!);
}

/** Every connection of `subject`, whatever its state, by provider: what the user's connections page lists. */
export async function findConnectionsOf(db: Queryable, subject: Principal): Promise<ConnectionRecord[]> {
  const { rows } = await db.query<Row>(
    'SELECT * FROM connections WHERE subject_iss = $1 AND subject_sub = $2 ORDER BY provider, preferred DESC, connected_at, id',
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
            lease_until = CASE WHEN $2 = $7 THEN $5::timestamptz END
      WHERE id = $1 AND state = ANY($3) AND ($6::bigint IS NULL OR version = $6)
        -- A lease ($7, the refreshing state) is taken over only once its time ran out.
        AND ($2 <> $7 OR state <> $7 OR lease_until < $4)
      RETURNING *`,
    [
      move.id,
      to,
      fromStatesOf(move.event),
      move.now,
      move.leaseUntil ?? null,
      move.version ?? null,
      toStateOf('refresh_started'),
    ],
  );
  return rows[0] && fromRow(rows[0]);
}

/** Notes a call made through the connection (for the connections page), at most once a minute per connection. */
export async function touchConnection(db: Queryable, id: string, now: Date): Promise<void> {
  const write = touchConnectionAlongside(id, now);
  await db.query(statementText(write), write.values);
}

/** touchConnection as a write beside another statement's (the receipt naming the connection it runs on). */
export const touchConnectionAlongside = (id: string, now: Date): Alongside => ({
  text: (p) =>
    `UPDATE connections SET last_used_at = ${p(2)}::timestamptz
      WHERE id = ${p(1)}::uuid AND (last_used_at IS NULL OR last_used_at < ${p(2)}::timestamptz - interval '1 minute')`,
  values: [id, now],
});

/**
 * Active connections whose access token expires before `before` and which hold a refresh token,
 * soonest first, at most `limit`: what the proactive refresh renews. No row is locked: the refresh
 * lease (moveConnection's compare-and-set) is the claim, so two instances never renew one twice.
 */
export async function findExpiringConnections(
  db: Queryable,
  before: Date,
  limit: number,
): Promise<{ connectionId: string; provider: string }[]> {
  const { rows } = await db.query<{ id: string; provider: string }>(
    `SELECT c.id, c.provider
       FROM connections c
       JOIN secrets a ON a.connection_id = c.id AND a.kind = 'access_token'
      WHERE c.state = $3 AND a.expires_at < $1
        AND EXISTS (SELECT 1 FROM secrets r WHERE r.connection_id = c.id AND r.kind = 'refresh_token')
      ORDER BY a.expires_at
      LIMIT $2`,
    [before, limit, 'active' satisfies ConnectionState],
  );
  return rows.map((r) => ({ connectionId: r.id, provider: r.provider }));
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

/** A provider's connections in one of `states` (an authorization server change ends them all). */
export async function findProviderConnections(
  db: Queryable,
  provider: string,
  states: readonly ConnectionState[],
): Promise<ConnectionRecord[]> {
  const { rows } = await db.query<Row>(
    'SELECT * FROM connections WHERE provider = $1 AND state = ANY($2) ORDER BY id',
    [provider, states],
  );
  return rows.map(fromRow);
}
