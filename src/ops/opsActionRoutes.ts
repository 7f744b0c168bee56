import { Router } from 'express';
import { markTerminal, reissueLink, requestRedrive } from './recovery.js';
import { redrive } from '../jobs/redrive.js';
import { parseInput } from '../web/parse.js';
import type { Notice } from './flowActions.js';
import { IdParams, operatorForm, pageModel, readAct } from './opsForms.js';
import type { OpsRoutesDeps } from './opsDeps.js';

/**
 * POST /ops/flows/:id/{close,reissue,redrive}: the recovery actions, each
 * with the operator's reason, each a ledger event. After each,
 * the browser is sent back to the flow (303), except a re-issue, whose new
 * connect link is shown once, for the operator to hand to the user.
 */
export function opsActionRoutes(deps: OpsRoutesDeps): Router {
  const router = Router();
  const { broker } = deps.ops;
  const form = operatorForm(broker.publicUrl.origin);
  const back = (id: string, done: Notice) => `/ops/flows/${id}?done=${done}`;

  router.post('/flows/:id/close', form, async (req, res) => {
    const { id } = parseInput(IdParams, req.params, 'flow id');
    await markTerminal(broker, id, readAct(req, res));
    res.redirect(303, back(id, 'closed'));
  });

  router.post('/flows/:id/reissue', form, async (req, res) => {
    const { id } = parseInput(IdParams, req.params, 'flow id');
    const { navigation, connectUrl } = await reissueLink(broker, id, readAct(req, res));
    res.type('html').send(
      deps.render('ops/reissued', {
        ...pageModel(res, 'Connect link re-issued', 'flows'),
        oldId: id,
        newId: navigation.id,
        connectUrl,
        subject: navigation.subject.sub,
        expiresAt: navigation.expiresAt.toISOString(),
      }),
    );
  });

  router.post('/flows/:id/redrive', form, async (req, res) => {
    const { id } = parseInput(IdParams, req.params, 'flow id');
    const act = readAct(req, res);
    const receipt = await requestRedrive(broker, id, act);
    // The request is recorded; performing it now is a courtesy. If it fails, the reconcile sweep retries it.
    const outcome = await redrive(deps.ops.redrive, receipt, act.actor).catch((err: unknown) => {
      deps.logger.warn(
        { err, receiptId: receipt.id },
        're-drive from the operator page failed; left to the reconcile sweep',
      );
      return undefined;
    });
    res.redirect(303, back(receipt.navigationId, outcome ? 'redriven' : 'redrive_waiting'));
  });

  return router;
}
