import type { BusinessOutcome } from './acceptOriginalOperation.js';
import { recordWithoutMoving } from './advance.js';
import { findNavigationById } from './navigationRepo.js';
import { withTransaction } from '../db/transaction.js';
import { UpstreamAuthError } from '../errors/appError.js';
import { needsReauthEvent } from '../events/webhookEvent.js';
import { enqueueEvent } from '../events/webhookOutboxRepo.js';
import { equalInConstantTime } from '../shared/tokens.js';
import {
  findConnectionById,
  moveConnection,
  touchConnection,
  type ConnectionRecord,
} from '../secrets/connectionsRepo.js';
import { deleteSecrets, findSecrets } from '../secrets/secretsRepo.js';
import { openSecret, type TokenVaultDeps } from '../secrets/tokenVault.js';

/**
 * The provider answered 401 to a call made with a stored access token
 * (RFC 6750 §3.1, invalid_token): it refused the call, so it did nothing.
 */
export class UpstreamUnauthorizedError extends UpstreamAuthError {
  constructor(message: string) {
    super(message, { expose: true });
  }
}

/**
 * Why an accepted operation was not done and the user must connect again: the provider refused the
 * token, there is no connection any more, or the connection lacks scopes the operation needs.
 */
export type ReconnectReason = 'upstream_unauthorized' | 'not_connected' | 'scopes_missing';
const isReconnectReason = (value: unknown): value is ReconnectReason =>
  value === 'upstream_unauthorized' || value === 'not_connected' || value === 'scopes_missing';

/** The outcome recorded for it: failed, token-free, and final (a failed receipt is never re-driven). */
export const reconnectOutcome = (
  provider: string,
  reason: ReconnectReason,
  missing: readonly string[] = [],
): BusinessOutcome => ({
  status: 'failed',
  outcome: { error: reason, provider, ...(reason === 'scopes_missing' && { missing: [...missing] }) },
});

/** The reason, when `outcome` is one that tells the user to connect again. */
export function reconnectReasonOf(outcome: {
  status: string;
  outcome?: Record<string, unknown> | undefined;
}): ReconnectReason | undefined {
  const error = outcome.outcome?.['error'];
  return outcome.status === 'failed' && isReconnectReason(error) ? error : undefined;
}

/**
 * Forgets one connection's tokens after the provider refused `refusedToken` (the user's other
 * connections to the provider are untouched):
 * in one transaction, the rows are locked, deleted only if the stored access
 * token is still the refused one (a reconnect or refresh that stored a new one
 * meanwhile is kept), the connection becomes `needs_reauth`, and
 * `connection_forgotten` is recorded on the flow whose callback stored them.
 * Returns whether it forgot them.
 */
export async function forgetConnection(
  deps: Pick<TokenVaultDeps, 'pool' | 'box' | 'clock'>,
  connectionId: string,
  refusedToken: string,
): Promise<boolean> {
  return withTransaction(deps.pool, async (tx) => {
    // FOR UPDATE: a callback storing fresh tokens waits for this, or this sees its tokens.
    const secrets = await findSecrets(tx, connectionId, true);
    const access = secrets.find((s) => s.kind === 'access_token');
    if (!access || !equalInConstantTime(openSecret(deps.box, access), refusedToken)) return false;
    const { provider, subject } = access;
    await deleteSecrets(tx, connectionId);
    const connection = await findConnectionById(tx, connectionId);
    if (connection) await moveConnection(tx, { id: connection.id, event: 'token_refused', now: deps.clock.now() });
    await enqueueEvent(
      tx,
      needsReauthEvent({ id: connectionId, provider, subject }, 'token_refused', deps.clock.now()),
    );
    const navigation =
      access.navigationId === undefined ? undefined : await findNavigationById(tx, access.navigationId);
    if (navigation) {
      await recordWithoutMoving(tx, navigation, 'connection_forgotten', {
        actor: `provider:${provider}`,
        now: deps.clock.now(),
        evidence: { provider, reason: 'upstream_401' },
      });
    }
    return true;
  });
}

// touchConnection's own bound: last_used_at moves at most once a minute.
const TOUCH_EVERY_MS = 60_000;

/** A stored token and the record of the connection it belongs to. */
export interface StoredAccess {
  token: string;
  connection: ConnectionRecord;
}

/**
 * Whether a call through `connection` is to be noted as its last use (touchConnection): the record
 * was read for this call, and one noted less than a minute ago would not change.
 */
export const touchDue = (connection: Pick<ConnectionRecord, 'lastUsedAt'>, now: Date): boolean =>
  !connection.lastUsedAt || now.getTime() - connection.lastUsedAt.getTime() >= TOUCH_EVERY_MS;

/**
 * Performs a call with a stored token; a 401 forgets that token and becomes
 * the reconnect outcome instead of an error, for the caller to ask the user
 * to connect again (and, with a receipt, to record as the final outcome).
 * `touched`: the caller noted this use already, in a statement of its own.
 */
export async function performOrForget(
  deps: Pick<TokenVaultDeps, 'pool' | 'box' | 'clock'>,
  access: StoredAccess,
  perform: (access: StoredAccess) => Promise<BusinessOutcome>,
  touched = false,
): Promise<BusinessOutcome> {
  const { connection, token } = access;
  try {
    // Every call through a stored token passes here: what the connections page shows as last used.
    const now = deps.clock.now();
    if (!touched && touchDue(connection, now)) await touchConnection(deps.pool, connection.id, now);
    return await perform(access);
  } catch (err) {
    if (!(err instanceof UpstreamUnauthorizedError)) throw err;
    await forgetConnection(deps, connection.id, token);
    return reconnectOutcome(connection.provider, 'upstream_unauthorized');
  }
}
