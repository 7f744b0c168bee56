import { Router } from 'express';
import { z } from 'zod';
import { findLiveSessions } from '../auth/webSessionRepo.js';
import { parseInput } from '../web/parse.js';
import { operatorForm, optional, pageModel, readAct } from './opsForms.js';
import type { OpsRoutesDeps } from './opsDeps.js';
import { parseSessionTarget, revokeSessions } from './sessionRevocation.js';

const SessionsQuery = z.strictObject({
  subject: optional(z.string().trim().min(1).max(255)),
  revoked: optional(z.coerce.number().int().min(0).max(100_000)),
});
const TargetParams = z.strictObject({ target: z.string().min(1).max(255) });
const SESSIONS_LIMIT = 200;

/**
 * GET /ops/sessions lists live browser sessions (no secret: the public id, subject, times), of one
 * subject when asked; POST /ops/sessions/:target/revoke ends one session (`sess_…`) or every
 * session of a subject, with a reason: `broker sessions list` and `revoke` as pages.
 */
export function opsSessionRoutes(deps: OpsRoutesDeps): Router {
  const router = Router();

  router.get('/sessions', async (req, res) => {
    const { subject, revoked } = parseInput(SessionsQuery, req.query, 'query');
    const sessions = await findLiveSessions(
      deps.pool,
      { ...(subject !== undefined && { subject }), limit: SESSIONS_LIMIT },
      deps.clock.now(),
    );
    res.type('html').send(
      deps.render('ops/sessions', {
        ...pageModel(res, 'Browser sessions', 'sessions'),
        subject,
        revoked,
        limit: SESSIONS_LIMIT,
        sessions: sessions.map((s) => ({
          ...s,
          createdAt: s.createdAt.toISOString(),
          lastSeenAt: s.lastSeenAt.toISOString(),
          expiresAt: s.expiresAt.toISOString(),
        })),
      }),
    );
  });

  router.post('/sessions/:target/revoke', operatorForm(deps.ops.broker.publicUrl.origin), async (req, res) => {
    const target = parseSessionTarget(parseInput(TargetParams, req.params, 'path').target);
    const act = readAct(req, res);
    const revoked = await revokeSessions(deps.pool, target, act, deps.clock.now());
    res.redirect(303, `/ops/sessions?revoked=${revoked.length}`);
  });

  return router;
}
