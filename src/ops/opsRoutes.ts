import { Router } from 'express';
import { requireOperator } from './operatorGuard.js';
import { opsActionRoutes } from './opsActionRoutes.js';
import { opsApprovalRoutes } from './opsApprovalRoutes.js';
import { opsConnectionRoutes } from './opsConnectionRoutes.js';
import { opsDashboardRoutes } from './opsDashboardRoutes.js';
import type { OpsRoutesDeps } from './opsDeps.js';
import { opsFlowRoutes } from './opsFlowRoutes.js';
import { opsSessionRoutes } from './opsSessionRoutes.js';

/**
 * /ops/…: operator pages, every one behind requireOperator.
 *
 *   GET  /ops                               dashboard: gates, charts, kill switch
 *   POST /ops/connections/{pause,resume}    kill switch, with a reason
 *   GET  /ops/flows  /ops/flows/:id         flow list with filters; one flow and its events
 *   GET  /ops/stuck  /ops/reconcile         open past expiry; what does not add up
 *   POST /ops/flows/:id/{close,reissue,redrive}   recovery actions, with a reason
 *   GET  /ops/approvals                     the approval queue
 *   POST /ops/approvals/:id/{approve,reject}      a decision, with a reason
 *   GET  /ops/connections                   connections, filtered by subject, provider and state
 *   POST /ops/connections/:id/revoke        disconnect one (revoked at the provider where it can be), with a reason
 *   GET  /ops/sessions                      live browser sessions, of one subject with ?subject=
 *   POST /ops/sessions/:target/revoke       end one session (sess_…) or a subject's every one, with a reason
 */
export function opsRoutes(deps: OpsRoutesDeps): Router {
  const router = Router();
  router.use(requireOperator(deps));
  router.use(opsDashboardRoutes(deps));
  router.use(opsFlowRoutes(deps));
  router.use(opsActionRoutes(deps));
  router.use(opsApprovalRoutes(deps));
  router.use(opsConnectionRoutes(deps));
  router.use(opsSessionRoutes(deps));
  return router;
}
