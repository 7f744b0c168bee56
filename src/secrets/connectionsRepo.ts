import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { Queryable } from '../db/pool.js';

/** A connection's record beside its tokens (migrations/0011_connections.sql): never a token. */
export interface ConnectionRecord {
  id: string;
  subject: Principal;
  provider: string;
  /** Who the user is at the provider (ID token `sub`, or the provider's identity call); undefined only for connections made before it was recorded. */
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
}

export type ConnectionWrite = Omit<ConnectionRecord, 'id' | 'connectedAt'>;

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
});

/**
 * Records (subject, provider)'s connection in the caller's transaction: a
 * reconnect replaces every fact of the previous one and keeps its id.
 */
export async function upsertConnection(db: Queryable, c: ConnectionWrite, now: Date): Promise<ConnectionRecord> {
  const { rows } = await db.query<Row>(
    `INSERT INTO connections (id, subject_iss, subject_sub, provider, upstream_subject, upstream_name, granted_scopes, metadata, api_base, navigation_id, connected_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
     ON CONFLICT (subject_iss, subject_sub, provider) DO UPDATE
        SET upstream_subject = EXCLUDED.upstream_subject, upstream_name = EXCLUDED.upstream_name, granted_scopes = EXCLUDED.granted_scopes,
            metadata = EXCLUDED.metadata, api_base = EXCLUDED.api_base, navigation_id = EXCLUDED.navigation_id,
            connected_at = EXCLUDED.connected_at, updated_at = EXCLUDED.updated_at
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
