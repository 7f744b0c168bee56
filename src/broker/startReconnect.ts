import type { Principal } from '../auth/principal.js';
import { ConflictError, NotFoundError } from '../errors/appError.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { RECONNECT } from '../flow/navigationStates.js';
import { reconnectableStates } from '../secrets/connectionStates.js';
import { findConnectionsOf } from '../secrets/connectionsRepo.js';
import type { BrokerDeps } from './brokerDeps.js';
import { findReusableNavigation, startNavigation, type NavigationRequest } from './startNavigation.js';

/** What a reconnect flow records as its request: the connection it reconnects (never a tool call's digest). */
export const reconnectRequest = (connectionId: string): string => `reconnect ${connectionId}`;

/**
 * The signed-in user asks, on the connections page, to reconnect one of their
 * connections that needs them again. Returns the connect link of a reconnect
 * flow: the same consent page, transitions, callback and vault as a tool's
 * flow (so the callback keeps the connection's id and refuses another
 * account), but with no tool operation, so nothing is accepted or performed
 * when it completes; waiting tool flows of the same provider are settled by
 * its callback as by any other. A second click while it is open gets the same
 * link; quotas and the kill switch apply as to any new flow.
 */
export async function startReconnect(
  deps: BrokerDeps,
  input: { principal: Principal; connectionId: string },
): Promise<{ navigation: NavigationRecord; connectUrl: string }> {
  const connection = (await findConnectionsOf(deps.pool, input.principal)).find((c) => c.id === input.connectionId);
  // Another user's connection is as unknown as one that does not exist.
  if (!connection) throw new NotFoundError('You have no such connection.');
  const client = deps.providers.get(connection.provider);
  if (!client) throw new NotFoundError(`Provider ${connection.provider} is no longer configured.`);
  const name = client.provider.displayName;
  if (!reconnectableStates.has(connection.state))
    throw new ConflictError(
      connection.state === 'revoked'
        ? `Your ${name} connection was disconnected. Your app asks you to connect it again when it needs it.`
        : `Your ${name} connection works; there is nothing to reconnect.`,
    );
  const request: NavigationRequest = {
    principal: input.principal,
    clientId: undefined,
    tool: '',
    requestDigest: reconnectRequest(connection.id),
    provider: connection.provider,
    purpose: `reconnect ${name}`,
    lineage: RECONNECT,
  };
  return (await findReusableNavigation(deps, request)) ?? startNavigation(deps, request);
}
