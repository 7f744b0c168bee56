import { Router } from 'express';
import { z } from 'zod';
import { connectionStates } from '../secrets/connectionStates.js';
import { listConnections, type ConnectionRecord } from '../secrets/connectionsRepo.js';
import { parseInput } from '../web/parse.js';
import { describeRevocation, revokeConnection } from './connectionRevocation.js';
import { IdParams, operatorForm, optional, pageModel, readAct } from './opsForms.js';
import type { OpsRoutesDeps } from './opsDeps.js';
import { providerNameOf } from '../broker/brokerDeps.js';

const ConnectionsQuery = z.strictObject({
  subject: optional(z.string().trim().min(1).max(255)),
  provider: optional(z.string().trim().min(1).max(100)),
  state: optional(z.enum(connectionStates)),
});
const CONNECTIONS_LIMIT = 200;

/**
 * GET /ops/connections lists connections (no token: the account, state, scopes and times), filtered
 * by subject, provider and state; POST /ops/connections/:id/revoke disconnects one with a reason and
 * shows what the provider made of it: `broker connections list` and `revoke` as pages.
 */
export function opsConnectionRoutes(deps: OpsRoutesDeps): Router {
  const router = Router();
  const { broker } = deps.ops;
  const displayName = (provider: string) => providerNameOf(broker, provider);
  const row = (c: ConnectionRecord) => ({
    id: c.id,
    subject: c.subject.sub,
    provider: displayName(c.provider),
    account: c.upstreamName ?? c.upstreamSubject ?? '',
    state: c.state,
    scopes: c.grantedScopes.join(' '),
    connectedAt: c.connectedAt.toISOString(),
    lastUsedAt: c.lastUsedAt?.toISOString(),
  });

  router.get('/connections', async (req, res) => {
    const filters = parseInput(ConnectionsQuery, req.query, 'query');
    const found = await listConnections(deps.pool, { ...filters, limit: CONNECTIONS_LIMIT });
    res.type('html').send(
      deps.render('ops/connections', {
        ...pageModel(res, 'Connections', 'connections'),
        filters,
        states: connectionStates,
        limit: CONNECTIONS_LIMIT,
        connections: found.map(row),
      }),
    );
  });

  router.post('/connections/:id/revoke', operatorForm(broker.publicUrl.origin), async (req, res) => {
    const { id } = parseInput(IdParams, req.params, 'connection id');
    const result = await revokeConnection(broker, id, readAct(req, res));
    res.type('html').send(
      deps.render('ops/connectionRevoked', {
        ...pageModel(res, 'Connection revoked', 'connections'),
        revokedAtProvider: result.atProvider === 'revoked',
        provider: displayName(result.provider),
        summary: describeRevocation(result),
      }),
    );
  });

  return router;
}
