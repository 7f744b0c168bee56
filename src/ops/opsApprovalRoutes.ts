import { Router } from 'express';
import { z } from 'zod';
import { findApprovals } from '../broker/approvalRepo.js';
import { decideApproval } from '../broker/approvals.js';
import { parseInput } from '../web/parse.js';
import { operatorForm, pageModel, readAct } from './opsForms.js';
import type { OpsRoutesDeps } from './opsDeps.js';

const QueueQuery = z.strictObject({
  status: z.preprocess((v) => (v === '' ? undefined : v), z.enum(['pending', 'approved', 'rejected']).optional()),
});
const DecisionParams = z.strictObject({ id: z.uuid(), decision: z.enum(['approve', 'reject']) });
const QUEUE_LIMIT = 200;

/**
 * The approval queue: GET /ops/approvals lists held
 * high-risk operations (pending first, then the latest decisions); POST
 * /ops/approvals/:id/{approve,reject} decides one, once, with a reason.
 * Rejection ends the flow.
 */
export function opsApprovalRoutes(deps: OpsRoutesDeps): Router {
  const router = Router();
  const { broker } = deps.ops;

  router.get('/approvals', async (req, res) => {
    const { status } = parseInput(QueueQuery, req.query, 'query');
    const approvals = await findApprovals(deps.pool, status, QUEUE_LIMIT);
    res.type('html').send(
      deps.render('ops/approvals', {
        ...pageModel(res, 'Approval queue', 'approvals'),
        status,
        approvals: approvals.map((a) => ({
          ...a,
          requestedAt: a.requestedAt.toISOString(),
          decidedAt: a.decidedAt?.toISOString(),
        })),
      }),
    );
  });

  router.post('/approvals/:id/:decision', operatorForm(broker.publicUrl.origin), async (req, res) => {
    const { id, decision } = parseInput(DecisionParams, req.params, 'path');
    const act = readAct(req, res);
    const decided = await decideApproval(broker, id, decision, act.reason, act);
    res.redirect(303, `/ops/flows/${decided.navigationId}?done=${decision === 'approve' ? 'approved' : 'rejected'}`);
  });

  return router;
}
