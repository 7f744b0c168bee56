import {
  completableStates,
  completionEvents,
  openStates,
  RECONNECT,
  State,
  verifiedStates,
} from '../flow/navigationStates.js';
import type { Queryable } from '../db/pool.js';
import { countAcceptedMoreThanOnce, type TokenScan } from './gateScanRepo.js';

// Read-only questions operators ask of the ledger. SELECT only.
//
// Every state and event named here comes from the transition table and reaches
// SQL as a parameter, so a state the table gains is counted where it belongs
// (a list written out in SQL once left OPERATION_REJECTED out of "verified").
const OPEN = [...openStates];
const VERIFIED = [...verifiedStates];
const COMPLETABLE = [...completableStates];

export interface FlowFilters {
  state?: string;
  lineage?: string;
  subject?: string;
  provider?: string;
  tool?: string;
  /** Only flows created at least this many seconds ago. */
  olderThanSeconds?: number;
  limit: number;
}

export interface FlowRow {
  id: string;
  status: string;
  lineage: string;
  subject: string;
  provider: string;
  tool: string;
  createdAt: Date;
  updatedAt: Date;
  expiresAt: Date;
}

interface Row {
  id: string;
  status: string;
  lineage: string;
  subject_sub: string;
  provider: string;
  tool: string;
  created_at: Date;
  updated_at: Date;
  expires_at: Date;
}

const toFlow = (r: Row): FlowRow => ({
  id: r.id,
  status: r.status,
  lineage: r.lineage,
  subject: r.subject_sub,
  provider: r.provider,
  tool: r.tool,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  expiresAt: r.expires_at,
});

const FLOW_COLUMNS = 'id, status, lineage, subject_sub, provider, tool, created_at, updated_at, expires_at';

export async function findFlows(db: Queryable, f: FlowFilters, now: Date): Promise<FlowRow[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${FLOW_COLUMNS} FROM elicitation_navigations
      WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR lineage = $2) AND ($3::text IS NULL OR subject_sub = $3)
        AND ($4::text IS NULL OR provider = $4) AND ($5::text IS NULL OR tool = $5)
        AND ($6::int IS NULL OR created_at <= $7::timestamptz - make_interval(secs => $6))
      ORDER BY created_at DESC LIMIT $8`,
    [
      f.state ?? null,
      f.lineage ?? null,
      f.subject ?? null,
      f.provider ?? null,
      f.tool ?? null,
      f.olderThanSeconds ?? null,
      now,
      f.limit,
    ],
  );
  return rows.map(toFlow);
}

/** Flows still open past their expiry: nothing will move them but the expiry sweep or an operator. */
export async function findStuckFlows(db: Queryable, now: Date, limit: number): Promise<FlowRow[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${FLOW_COLUMNS} FROM elicitation_navigations WHERE status = ANY($3) AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
    [now, limit, OPEN],
  );
  return rows.map(toFlow);
}

export interface FlowDetail {
  flow: FlowRow & { purpose: string; targetHost: string; retryGeneration: number };
  events: { at: Date; from: string; to: string; event: string; actor: string; evidence: unknown }[];
  consent: { at: Date; browserSub: string; destination: string } | undefined;
  receipt:
    | {
        id: string;
        lineage: string;
        jsonrpcId: string | null;
        retryGeneration: number | null;
        outcomeStatus: string;
        createdAt: Date;
        completedAt: Date | null;
      }
    | undefined;
}

export async function findFlowDetail(db: Queryable, id: string): Promise<FlowDetail | undefined> {
  const flow = await db.query<Row & { purpose: string; target_host: string; retry_generation: number }>(
    `SELECT ${FLOW_COLUMNS}, purpose, target_host, retry_generation FROM elicitation_navigations WHERE id = $1`,
    [id],
  );
  const f = flow.rows[0];
  if (!f) return undefined;
  const [events, consent, receipt] = await Promise.all([
    db.query<{
      created_at: Date;
      from_status: string;
      to_status: string;
      event: string;
      actor: string;
      evidence: unknown;
    }>(
      'SELECT created_at, from_status, to_status, event, actor, evidence FROM navigation_events WHERE navigation_id = $1 ORDER BY flow_seq',
      [id],
    ),
    db.query<{ created_at: Date; browser_sub: string; displayed_destination: string }>(
      'SELECT created_at, browser_sub, displayed_destination FROM consent_receipts WHERE navigation_id = $1',
      [id],
    ),
    db.query<{
      id: string;
      lineage: string;
      jsonrpc_id: string | null;
      retry_generation: number | null;
      outcome_status: string;
      created_at: Date;
      completed_at: Date | null;
    }>(
      'SELECT id, lineage, jsonrpc_id, retry_generation, outcome_status, created_at, completed_at FROM operation_receipts WHERE navigation_id = $1',
      [id],
    ),
  ]);
  const c = consent.rows[0];
  const r = receipt.rows[0];
  return {
    flow: { ...toFlow(f), purpose: f.purpose, targetHost: f.target_host, retryGeneration: f.retry_generation },
    events: events.rows.map((e) => ({
      at: e.created_at,
      from: e.from_status,
      to: e.to_status,
      event: e.event,
      actor: e.actor,
      evidence: e.evidence,
    })),
    consent: c ? { at: c.created_at, browserSub: c.browser_sub, destination: c.displayed_destination } : undefined,
    receipt: r
      ? {
          id: r.id,
          lineage: r.lineage,
          jsonrpcId: r.jsonrpc_id,
          retryGeneration: r.retry_generation,
          outcomeStatus: r.outcome_status,
          createdAt: r.created_at,
          completedAt: r.completed_at,
        }
      : undefined,
  };
}

export interface ReconcileFinding {
  kind: 'accepted_without_outcome' | 'verified_never_accepted' | 'secret_without_verified_flow' | 'consent_missing';
  id: string;
  detail: string;
}

/**
 * What does not add up: accepted operations without an outcome
 * (older than `graceSeconds`), verified tool flows never accepted (a reconnect
 * flow has no operation), secrets with no
 * verified flow behind them, flows past consent without a consent receipt.
 */
export async function findReconcileFindings(
  db: Queryable,
  now: Date,
  graceSeconds: number,
): Promise<ReconcileFinding[]> {
  const cutoff = new Date(now.getTime() - graceSeconds * 1000);
  const [pending, unaccepted, orphanSecrets, noConsent] = await Promise.all([
    db.query<{ id: string; navigation_id: string }>(
      `SELECT id, navigation_id FROM operation_receipts WHERE outcome_status = 'pending' AND created_at <= $1 ORDER BY created_at`,
      [cutoff],
    ),
    // A reconnect flow has no operation: verified is where it ends.
    db.query<{ id: string; subject_sub: string }>(
      `SELECT id, subject_sub FROM elicitation_navigations
        WHERE status = $2 AND updated_at <= $1 AND lineage <> $3 ORDER BY updated_at`,
      [cutoff, State.REQUIREMENT_VERIFIED, RECONNECT],
    ),
    db.query<{ id: string; provider: string; subject_sub: string }>(
      `SELECT s.id, s.provider, s.subject_sub FROM secrets s
         LEFT JOIN elicitation_navigations n ON n.id = s.navigation_id
        WHERE n.id IS NULL OR n.status <> ALL($1)`,
      [VERIFIED],
    ),
    // A flow that entered OUT_OF_BAND_PENDING went through consent, whatever its state now.
    db.query<{ id: string; status: string }>(
      `SELECT n.id, n.status FROM elicitation_navigations n
        WHERE EXISTS (SELECT 1 FROM navigation_events e WHERE e.navigation_id = n.id AND e.to_status = $1)
          AND NOT EXISTS (SELECT 1 FROM consent_receipts c WHERE c.navigation_id = n.id)`,
      [State.OUT_OF_BAND_PENDING],
    ),
  ]);
  return [
    ...pending.rows.map((r) => ({
      kind: 'accepted_without_outcome' as const,
      id: r.id,
      detail: `receipt of navigation ${r.navigation_id} has no outcome: re-drive it (same idempotency key)`,
    })),
    ...unaccepted.rows.map((r) => ({
      kind: 'verified_never_accepted' as const,
      id: r.id,
      detail: `${r.subject_sub} connected, but the operation was never accepted`,
    })),
    ...orphanSecrets.rows.map((r) => ({
      kind: 'secret_without_verified_flow' as const,
      id: r.id,
      detail: `${r.provider} secret of ${r.subject_sub} has no verified flow`,
    })),
    ...noConsent.rows.map((r) => ({
      kind: 'consent_missing' as const,
      id: r.id,
      detail: `reached ${r.status} without a consent receipt`,
    })),
  ];
}

export interface GateFigures {
  /** Flows that reached the third party, and how many of them have a consent receipt. */
  consent: { reached: number; withReceipt: number };
  /** Seconds from OUT_OF_BAND_PENDING to REQUIREMENT_VERIFIED. */
  completionToVerified: { count: number; p50: number | null; p99: number | null };
  /** Expired flows, and how many are recoverable (no operation accepted: a new call starts a new flow). */
  expired: { total: number; recoverable: number };
  /** Consent or tokens bound to a subject other than the flow's. */
  crossUserBindings: number;
  /** Completion events that moved a flow from anywhere but OUT_OF_BAND_PENDING / COMPLETION_NOTIFIED. */
  unexpectedCompletions: number;
  /** Operations accepted more than once across lineages (gateScanRepo.ts). */
  acceptedMoreThanOnce: number;
  /** Third-party tokens looked for outside the vault, when the caller had tokens to look for (`broker ledger gates --tokens-file`). */
  tokensOutsideVault?: TokenScan | undefined;
}

/** The release gates' figures, from live data (judged in gates.ts). */
export async function findGateFigures(db: Queryable): Promise<GateFigures> {
  const [consent, latency, expired, cross, unexpected, acceptedMoreThanOnce] = await Promise.all([
    db.query<{ reached: string; with_receipt: string }>(
      `SELECT count(*) AS reached, count(c.id) AS with_receipt FROM elicitation_navigations n
         LEFT JOIN consent_receipts c ON c.navigation_id = n.id
        WHERE EXISTS (SELECT 1 FROM navigation_events e WHERE e.navigation_id = n.id AND e.to_status = $1)`,
      [State.OUT_OF_BAND_PENDING],
    ),
    db.query<{ count: string; p50: number | null; p99: number | null }>(
      `WITH d AS (
         SELECT extract(epoch FROM v.created_at - p.created_at) AS s
           FROM navigation_events p JOIN navigation_events v ON v.navigation_id = p.navigation_id
          WHERE p.to_status = $1 AND v.to_status = $2)
       SELECT count(*) AS count, percentile_cont(0.5) WITHIN GROUP (ORDER BY s) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY s) AS p99 FROM d`,
      [State.OUT_OF_BAND_PENDING, State.REQUIREMENT_VERIFIED],
    ),
    db.query<{ total: string; recoverable: string }>(
      `SELECT count(*) AS total, count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM operation_receipts r WHERE r.navigation_id = n.id)) AS recoverable
         FROM elicitation_navigations n WHERE n.status = $1`,
      [State.EXPIRED],
    ),
    db.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM consent_receipts c JOIN elicitation_navigations n ON n.id = c.navigation_id
                WHERE c.browser_iss <> n.subject_iss OR c.browser_sub <> n.subject_sub)
            + (SELECT count(*) FROM secrets s JOIN elicitation_navigations n ON n.id = s.navigation_id
                WHERE s.subject_iss <> n.subject_iss OR s.subject_sub <> n.subject_sub) AS n`,
    ),
    db.query<{ n: string }>(
      `SELECT count(*) AS n FROM navigation_events
        WHERE event = ANY($1) AND from_status <> to_status AND from_status <> ALL($2)`,
      [completionEvents, COMPLETABLE],
    ),
    countAcceptedMoreThanOnce(db),
  ]);
  const c = consent.rows[0]!;
  const l = latency.rows[0]!;
  const e = expired.rows[0]!;
  return {
    consent: { reached: Number(c.reached), withReceipt: Number(c.with_receipt) },
    completionToVerified: {
      count: Number(l.count),
      p50: l.p50 === null ? null : Number(l.p50),
      p99: l.p99 === null ? null : Number(l.p99),
    },
    expired: { total: Number(e.total), recoverable: Number(e.recoverable) },
    crossUserBindings: Number(cross.rows[0]!.n),
    unexpectedCompletions: Number(unexpected.rows[0]!.n),
    acceptedMoreThanOnce,
  };
}
