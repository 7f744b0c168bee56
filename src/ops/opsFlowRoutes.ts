import { Router } from 'express';
import { z } from 'zod';
import { findApprovalByNavigation } from '../broker/approvalRepo.js';
import { lineages } from '../flow/navigationStates.js';
import { findReissueOf } from '../broker/navigationRepo.js';
import { navigationStates } from '../flow/navigationStates.js';
import { NotFoundError } from '../errors/appError.js';
import { AGE_HINT, parseAge } from '../ledger/flowAge.js';
import {
  findFlowDetail,
  findFlows,
  findReconcileFindings,
  findStuckFlows,
  type FlowFilters,
  type FlowRow,
} from '../ledger/ledgerQueriesRepo.js';
import { parseInput } from '../web/parse.js';
import { findReissuedFrom } from './dashboardRepo.js';
import { flowActions, NOTICES, notices } from './flowActions.js';
import { IdParams, optional, pageModel } from './opsForms.js';
import type { OpsRoutesDeps } from './opsDeps.js';

const FlowsQuery = z.strictObject({
  state: optional(z.enum(navigationStates)),
  lineage: optional(z.enum(lineages)),
  subject: optional(z.string().trim().min(1).max(255)),
  provider: optional(z.string().trim().min(1).max(100)),
  tool: optional(z.string().trim().min(1).max(100)),
  age: optional(
    z
      .string()
      .trim()
      .refine((age) => parseAge(age) !== undefined, `must be ${AGE_HINT}`),
  ),
  limit: optional(z.coerce.number().int().min(1).max(500)),
});
const DetailQuery = z.strictObject({ done: z.enum(notices).optional() });
const ReconcileQuery = z.strictObject({
  grace: optional(
    z.coerce
      .number()
      .int()
      .min(0)
      .max(30 * 86400),
  ),
});
const STUCK_LIMIT = 200;
const DEFAULT_GRACE_SECONDS = 300;

const flowRow = (f: FlowRow) => ({
  ...f,
  createdAt: f.createdAt.toISOString(),
  updatedAt: f.updatedAt.toISOString(),
  expiresAt: f.expiresAt.toISOString(),
});

/** GET /ops/flows, /ops/flows/:id, /ops/stuck, /ops/reconcile: the CLI's questions as pages. */
export function opsFlowRoutes(deps: OpsRoutesDeps): Router {
  const router = Router();
  const { pool, clock } = deps;

  router.get('/flows', async (req, res) => {
    const q = parseInput(FlowsQuery, req.query, 'filters');
    const olderThanSeconds = q.age === undefined ? undefined : parseAge(q.age);
    const filters: FlowFilters = {
      limit: q.limit ?? 50,
      ...(q.state ? { state: q.state } : {}),
      ...(q.lineage ? { lineage: q.lineage } : {}),
      ...(q.subject ? { subject: q.subject } : {}),
      ...(q.provider ? { provider: q.provider } : {}),
      ...(q.tool ? { tool: q.tool } : {}),
      ...(olderThanSeconds !== undefined ? { olderThanSeconds } : {}),
    };
    const flows = await findFlows(pool, filters, clock.now());
    res.type('html').send(
      deps.render('ops/flows', {
        ...pageModel(res, 'Flows', 'flows'),
        flows: flows.map(flowRow),
        filters: { ...q, limit: filters.limit },
        states: navigationStates,
        lineages,
      }),
    );
  });

  router.get('/flows/:id', async (req, res) => {
    const { id } = parseInput(IdParams, req.params, 'flow id');
    const { done } = parseInput(DetailQuery, req.query, 'query');
    const detail = await findFlowDetail(pool, id);
    if (!detail) throw new NotFoundError(`No flow ${id}.`);
    const [approval, reissuedAs, reissuedFrom] = await Promise.all([
      findApprovalByNavigation(pool, id),
      findReissueOf(pool, id),
      findReissuedFrom(pool, id),
    ]);
    const { flow, consent, receipt } = detail;
    res.type('html').send(
      deps.render('ops/flow', {
        ...pageModel(res, `Flow ${id.slice(0, 8)}`, 'flows'),
        notice: done ? NOTICES[done] : undefined,
        flow: {
          ...flowRow(flow),
          purpose: flow.purpose,
          targetHost: flow.targetHost,
          retryGeneration: flow.retryGeneration,
        },
        events: detail.events.map((e) => ({
          ...e,
          at: e.at.toISOString(),
          moved: e.from !== e.to,
          evidence: JSON.stringify(e.evidence ?? {}),
        })),
        consent: consent ? { ...consent, at: consent.at.toISOString() } : undefined,
        receipt: receipt
          ? { ...receipt, createdAt: receipt.createdAt.toISOString(), completedAt: receipt.completedAt?.toISOString() }
          : undefined,
        approval: approval
          ? {
              ...approval,
              requestedAt: approval.requestedAt.toISOString(),
              decidedAt: approval.decidedAt?.toISOString(),
            }
          : undefined,
        reissuedAs: reissuedAs?.id,
        reissuedFrom,
        can: flowActions(
          { status: flow.status, expiresAt: flow.expiresAt, receipt, reissuedAs: reissuedAs?.id },
          clock.now(),
        ),
      }),
    );
  });

  router.get('/stuck', async (req, res) => {
    parseInput(z.strictObject({}), req.query, 'query');
    const flows = await findStuckFlows(pool, clock.now(), STUCK_LIMIT);
    res.type('html').send(
      deps.render('ops/stuck', {
        ...pageModel(res, 'Stuck flows', 'stuck'),
        flows: flows.map(flowRow),
        limit: STUCK_LIMIT,
      }),
    );
  });

  router.get('/reconcile', async (req, res) => {
    const { grace } = parseInput(ReconcileQuery, req.query, 'query');
    const graceSeconds = grace ?? DEFAULT_GRACE_SECONDS;
    const findings = await findReconcileFindings(pool, clock.now(), graceSeconds);
    // Findings about a flow link to it; the others (a receipt, a secret) name their flow in the detail text.
    const flowKinds = new Set(['verified_never_accepted', 'consent_missing']);
    res.type('html').send(
      deps.render('ops/reconcile', {
        ...pageModel(res, 'Reconciliation', 'reconcile'),
        findings: findings.map((f) => ({ ...f, isFlow: flowKinds.has(f.kind) })),
        graceSeconds,
      }),
    );
  });

  return router;
}
