import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import type { FlowLineage, NavigationState } from './navigationStates.js';

/** Where the browser may be sent and come back (kept with the record, checked at every hop). */
export const RedirectPolicySchema = z.strictObject({
  /** The exact redirect URI registered with the provider. */
  callback: z.string(),
  /** The only page the flow may end on, on our origin. */
  done: z.string(),
});
export type RedirectPolicy = z.infer<typeof RedirectPolicySchema>;

/** elicitationNavigation.v1: one row of elicitation_navigations (docs/architecture.md, Data). */
export interface NavigationRecord {
  id: string;
  recordVersion: 'elicitationNavigation.v1';
  serverId: string;
  subject: Principal;
  clientId: string | undefined;
  requestDigest: string;
  tool: string;
  targetScheme: string;
  targetHost: string;
  redirectPolicy: RedirectPolicy;
  purpose: string;
  provider: string;
  handleDigest: Buffer;
  stateNonceDigest: Buffer | undefined;
  sessionGeneration: number;
  /** A reconnect flow's `tool` is '' and its `requestDigest` names the connection it reconnects. */
  lineage: FlowLineage;
  retryGeneration: number;
  status: NavigationState;
  rowVersion: number;
  createdAt: Date;
  expiresAt: Date;
  updatedAt: Date;
  /** The span that started the flow, as a W3C `traceparent`: its browser leg continues that trace (src/telemetry/). */
  traceParent?: string;
}

export interface NavigationRow {
  id: string;
  record_version: string;
  server_id: string;
  subject_iss: string;
  subject_sub: string;
  client_id: string | null;
  request_digest: string;
  tool: string;
  target_scheme: string;
  target_host: string;
  redirect_policy: unknown;
  purpose: string;
  provider: string;
  handle_digest: Buffer;
  state_nonce_digest: Buffer | null;
  session_generation: number;
  lineage: string;
  retry_generation: number;
  status: string;
  row_version: number;
  created_at: Date;
  expires_at: Date;
  updated_at: Date;
  /** Absent where a query names its own columns without it. */
  trace_parent?: string | null;
}

export function fromRow(row: NavigationRow): NavigationRecord {
  return {
    id: row.id,
    recordVersion: 'elicitationNavigation.v1',
    serverId: row.server_id,
    subject: { iss: row.subject_iss, sub: row.subject_sub },
    clientId: row.client_id ?? undefined,
    requestDigest: row.request_digest,
    tool: row.tool,
    targetScheme: row.target_scheme,
    targetHost: row.target_host,
    redirectPolicy: RedirectPolicySchema.parse(row.redirect_policy),
    purpose: row.purpose,
    provider: row.provider,
    handleDigest: row.handle_digest,
    stateNonceDigest: row.state_nonce_digest ?? undefined,
    sessionGeneration: row.session_generation,
    lineage: row.lineage as FlowLineage, // CHECK constraint in the schema
    retryGeneration: row.retry_generation,
    status: row.status as NavigationState, // CHECK constraint in the schema
    rowVersion: row.row_version,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    updatedAt: row.updated_at,
    ...(row.trace_parent ? { traceParent: row.trace_parent } : {}),
  };
}
