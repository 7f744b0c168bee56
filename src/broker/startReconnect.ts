import type { Principal } from '../auth/principal.js';
import { ConflictError, NotFoundError } from '../errors/appError.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { RECONNECT } from '../flow/navigationStates.js';
import { connectAgainStates } from '../secrets/connectionStates.js';
import type { Queryable } from '../db/pool.js';
import {
  findConnectionById,
  findConnectionsOf,
  findDefaultConnection,
  type ConnectionRecord,
} from '../secrets/connectionsRepo.js';
import type { Provider } from '../providers/providerConfig.js';
import type { BrokerDeps } from './brokerDeps.js';
import { findReusableNavigation, startNavigation, type NavigationRequest } from './startNavigation.js';

/** What a reconnect flow records as its request: the connection it reconnects (never a tool call's digest). */
export const reconnectRequest = (connectionId: string): string => `reconnect ${connectionId}`;
/** What an "add another account" flow records as its request: a new connection to the provider. */
export const addAccountRequest = (provider: string): string => `add account ${provider}`;

/** What a flow's callback stores into, read from its lineage and request. */
export type FlowTarget =
  /** That connection, as the same account: another account is refused. */
  | { kind: 'reconnect'; connectionId: string }
  /** A new connection, or the existing connection of the same account, updated in place. */
  | { kind: 'add' }
  /** A tool's flow: the connection of the same account, else the user's default. */
  | { kind: 'tool' };

const RECONNECT_REQUEST = /^reconnect ([0-9a-f-]{36})$/;

export function flowTargetOf(navigation: Pick<NavigationRecord, 'lineage' | 'requestDigest' | 'provider'>): FlowTarget {
  if (navigation.lineage !== RECONNECT) return { kind: 'tool' };
  if (navigation.requestDigest === addAccountRequest(navigation.provider)) return { kind: 'add' };
  const id = RECONNECT_REQUEST.exec(navigation.requestDigest)?.[1];
  // A reconnect flow names its connection (startReconnect below); one naming nothing adds nothing either.
  return id ? { kind: 'reconnect', connectionId: id } : { kind: 'add' };
}

/**
 * The connection a flow would reconnect if the same account came back: whose grant a second
 * consent grows, and whose account the consent page names. None for "add another account".
 */
export async function targetConnectionOf(
  db: Queryable,
  navigation: Pick<NavigationRecord, 'lineage' | 'requestDigest' | 'provider' | 'subject'>,
): Promise<ConnectionRecord | undefined> {
  const target = flowTargetOf(navigation);
  if (target.kind === 'add') return undefined;
  if (target.kind === 'reconnect') return findConnectionById(db, target.connectionId);
  return findDefaultConnection(db, navigation.subject, navigation.provider);
}

/**
 * Whether the provider names the account a user signs in as, so that two connections to it can be told
 * apart; an upstream MCP server does not (identity `none`): its one connection is always "the same account".
 */
export const accountsToldApart = (provider: Pick<Provider, 'identity'>): boolean =>
  !('from' in provider.identity && provider.identity.from === 'none');

/**
 * The signed-in user asks, on the connections page, to reconnect one of their
 * connections that needs them again, or that they disconnected. Returns the connect link of a reconnect
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
  if (!connectAgainStates.has(connection.state))
    throw new ConflictError(`Your ${name} connection works; there is nothing to reconnect.`);
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

/**
 * The signed-in user asks, on the connections page, to add another account of a provider they are
 * connected to (work and personal GitHub): the connect link of a flow like a reconnect's (no tool
 * operation), whose callback creates a new connection for an account the user has none for, or
 * updates in place the connection of an account they already have. A second click while it is open
 * gets the same link.
 */
export async function startAddAccount(
  deps: BrokerDeps,
  input: { principal: Principal; provider: string },
): Promise<{ navigation: NavigationRecord; connectUrl: string }> {
  const client = deps.providers.get(input.provider);
  if (!client) throw new NotFoundError('No such provider is configured.');
  const name = client.provider.displayName;
  if (!accountsToldApart(client.provider))
    throw new ConflictError(
      `${name} does not say which account you sign in as, so the broker keeps one connection to it: reconnect that one instead.`,
    );
  const request: NavigationRequest = {
    principal: input.principal,
    clientId: undefined,
    tool: '',
    requestDigest: addAccountRequest(input.provider),
    provider: input.provider,
    purpose: `add another ${name} account`,
    lineage: RECONNECT,
  };
  return (await findReusableNavigation(deps, request)) ?? startNavigation(deps, request);
}
