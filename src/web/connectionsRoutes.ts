import { Router, type Request } from 'express';
import { z } from 'zod';
import type { BrokerDeps } from '../broker/brokerDeps.js';
import { providerNameOf } from '../broker/brokerDeps.js';
import { disconnectConnection } from '../broker/disconnectConnection.js';
import { preferConnection } from '../broker/preferConnection.js';
import { accountsToldApart, startAddAccount, startReconnect } from '../broker/startReconnect.js';
import { ForbiddenError } from '../errors/appError.js';
import { connectAgainStates, type ConnectionState, disconnectedState } from '../secrets/connectionStates.js';
import { accountLabelOf, findConnectionsOf, type ConnectionRecord } from '../secrets/connectionsRepo.js';
import { csrfTokenFor, isValidCsrf, requireSameOrigin } from './middleware/csrf.js';
import { displayTime } from './displayTime.js';
import { parseInput } from './parse.js';
import type { Render } from './render.js';
import { formBody } from './requestBody.js';
import { signedInUser, type SignedInUser } from './signedInUser.js';

const ConnectionParams = z.strictObject({ id: z.uuid() });
const ActionBody = z.strictObject({ _csrf: z.string().max(128) });
const AddAccountBody = z.strictObject({ _csrf: z.string().max(128), provider: z.string().min(1).max(64) });
export const CONNECTIONS_PATH = '/connections';

export interface ConnectionsRoutesDeps {
  broker: BrokerDeps;
  render: Render;
}

/** How each state reads to the user; a reconnectable one also says what it means for their apps. */
const STATE_LABELS: Readonly<Record<ConnectionState, string>> = {
  active: 'Connected',
  refreshing: 'Connected',
  needs_reauth: 'Needs reconnecting',
  revoked: 'Disconnected',
};

/** A connection as the page shows it: never a token, nor the facts (metadata, API base) only tools need. */
function rowOf(deps: ConnectionsRoutesDeps, c: ConnectionRecord, all: readonly ConnectionRecord[]) {
  const configured = deps.broker.providers.get(c.provider);
  // Several accounts at one provider: which one a call uses when it names none is the user's to choose.
  const siblings = all.filter((o) => o.provider === c.provider && o.state !== disconnectedState).length;
  const providerName = providerNameOf(deps.broker, c.provider);
  return {
    id: c.id,
    provider: c.provider,
    providerName,
    account: accountLabelOf(c),
    isDefault: c.preferred && siblings > 1,
    defaultChosen: c.preferredChosen,
    canMakeDefault: siblings > 1 && c.state !== disconnectedState && !(c.preferred && c.preferredChosen),
    scopes: c.grantedScopes,
    state: c.state,
    stateLabel: STATE_LABELS[c.state],
    connectedAt: displayTime(c.connectedAt),
    lastUsedAt: c.lastUsedAt && displayTime(c.lastUsedAt),
    // A provider taken out of the configuration cannot be signed in to again.
    canReconnect: connectAgainStates.has(c.state) && configured !== undefined,
    reconnectText: c.state === disconnectedState ? `Connect ${providerName} again` : `Reconnect ${providerName}`,
    canDisconnect: c.state !== disconnectedState,
  };
}

/**
 * GET /connections, the signed-in user's own connections, and its actions
 * (POST, same origin and CSRF): reconnect sends the user through a reconnect
 * flow's connect link (broker/startReconnect.ts), and "add another account" through one that adds
 * a connection; "make default" chooses the connection a call naming no account uses
 * (broker/preferConnection.ts); disconnect revokes at the
 * provider where it can, deletes the tokens, and says which happened
 * (broker/disconnectConnection.ts).
 */
export function connectionsRoutes(deps: ConnectionsRoutesDeps): Router {
  const { broker, render } = deps;
  const router = Router();

  router.get(CONNECTIONS_PATH, async (req, res) => {
    parseInput(z.strictObject({}), req.query, 'query');
    const user = await signedInUser(broker, req);
    if (!user)
      return void res
        .type('html')
        .send(render('connections/signIn', { title: 'Sign in to see your connections', returnTo: CONNECTIONS_PATH }));
    const connections = await findConnectionsOf(broker.pool, user.principal);
    // "Add another account" for each configured provider the user has connected (an app's call makes the first),
    // where accounts can be told apart: another sign-in at one that names none would be the same connection.
    const providers = [...new Set(connections.map((c) => c.provider))]
      .map((id) => broker.providers.get(id)?.provider)
      .filter((p) => p !== undefined && accountsToldApart(p))
      .map((p) => ({ id: p!.id, name: p!.displayName }));
    res.type('html').send(
      render('connections/list', {
        title: 'Your connections',
        signedInAs: user.name,
        connections: connections.map((c) => rowOf(deps, c, connections)),
        providers,
        csrf: csrfTokenFor(user.cookie),
      }),
    );
  });

  /** The signed-in user posting an action for one of their connections, with a valid CSRF token; else undefined (sent back to the page). */
  const actor = async (req: Request): Promise<{ user: SignedInUser; connectionId: string } | undefined> => {
    const { id } = parseInput(ConnectionParams, req.params, 'connection');
    const body = parseInput(ActionBody, req.body, 'form');
    const user = await signedInUser(broker, req);
    if (!user) return undefined;
    if (!isValidCsrf(user.cookie, body._csrf))
      throw new ForbiddenError('This form has expired. Reload the page and try again.');
    return { user, connectionId: id };
  };
  const form = [requireSameOrigin(broker.publicUrl.origin), formBody({ limit: 2048 })];

  router.post(`${CONNECTIONS_PATH}/:id/reconnect`, ...form, async (req, res) => {
    const acting = await actor(req);
    if (!acting) return void res.redirect(303, CONNECTIONS_PATH);
    const { connectUrl } = await startReconnect(broker, {
      principal: acting.user.principal,
      connectionId: acting.connectionId,
    });
    res.redirect(303, connectUrl);
  });

  router.post(`${CONNECTIONS_PATH}/:id/default`, ...form, async (req, res) => {
    const acting = await actor(req);
    if (!acting) return void res.redirect(303, CONNECTIONS_PATH);
    await preferConnection(broker, { principal: acting.user.principal, connectionId: acting.connectionId });
    res.redirect(303, `${CONNECTIONS_PATH}#connection-${acting.connectionId}`);
  });

  // A flow like a reconnect's whose callback adds a connection (broker/startReconnect.ts startAddAccount).
  router.post(`${CONNECTIONS_PATH}/add`, ...form, async (req, res) => {
    const body = parseInput(AddAccountBody, req.body, 'form');
    const user = await signedInUser(broker, req);
    if (!user) return void res.redirect(303, CONNECTIONS_PATH);
    if (!isValidCsrf(user.cookie, body._csrf))
      throw new ForbiddenError('This form has expired. Reload the page and try again.');
    const { connectUrl } = await startAddAccount(broker, { principal: user.principal, provider: body.provider });
    res.redirect(303, connectUrl);
  });

  // Answered with its own page rather than a redirect: what the provider did is this request's outcome, not a
  // message a link could carry. A second submit finds the connection disconnected (409) and changes nothing.
  router.post(`${CONNECTIONS_PATH}/:id/disconnect`, ...form, async (req, res) => {
    const acting = await actor(req);
    if (!acting) return void res.redirect(303, CONNECTIONS_PATH);
    const { principal, name } = acting.user;
    const result = await disconnectConnection(broker, {
      connectionId: acting.connectionId,
      subject: principal,
      actor: `browser:${principal.sub}`,
      reason: 'disconnected by the user on the connections page',
    });
    const providerName = providerNameOf(broker, result.provider);
    res.type('html').send(
      render('connections/disconnected', {
        title: `${providerName} disconnected`,
        signedInAs: name,
        providerName,
        atProvider: result.atProvider,
        detail: result.detail,
      }),
    );
  });

  return router;
}
