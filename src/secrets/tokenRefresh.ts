import { setTimeout as sleep } from 'node:timers/promises';
import type { Queryable } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { AppError, UnavailableError } from '../errors/appError.js';
import { needsReauthEvent } from '../events/webhookEvent.js';
import { enqueueEvent } from '../events/webhookOutboxRepo.js';
import { appendObservations } from '../ledger/ledgerRepo.js';
import type { ProviderTokens } from '../oauth/providerClient.js';
import { ledgerEventOf, usableStates, type ConnectionEvent } from './connectionStates.js';
import { findConnectionById, moveConnection, secretOwnerOf, type ConnectionRecord } from './connectionsRepo.js';
import { keyMissing, recordUnopenable } from './missingKey.js';
import { deleteSecrets, findSecrets, type StoredSecret } from './secretsRepo.js';
import { openSecret, storeTokens, type TokenVaultDeps } from './sealedTokens.js';
import { reachFaultPoint } from '../shared/faultPoints.js';
import { IssuerChangedError } from '../errors/upstreamErrors.js';

/** How long one instance may hold a refresh: longer than the provider call's own timeout (shared/httpClient.ts). */
export const REFRESH_LEASE_MS = 30_000;
// How often a caller that lost the race looks for the winner's tokens.
const WAIT_STEP_MS = 25;

/** What one refresh attempt came to. */
export type RefreshResult =
  /** `renewed`: this call renewed it (else a fresh one was found, stored by whoever renewed it). */
  | { kind: 'token'; token: string; renewed: boolean }
  /** The user must connect again (the grant is gone, or there is nothing to refresh with). */
  | { kind: 'reconnect' }
  /** Another instance holds the lease: its tokens come when it finishes. */
  | { kind: 'busy' };

/**
 * Renews one connection's stale access token, once across all instances: a compare-and-set on
 * the connection's version takes a lease (state `refreshing`), the provider is called with no
 * transaction open and no row locked, and the new token set (a rotated refresh token with it) is
 * stored in the same transaction that ends the lease, only while the lease is still this caller's.
 * A caller that finds the lease taken waits for the winner and uses its tokens. A refused refresh
 * (invalid_grant) forgets the tokens and makes the connection `needs_reauth`.
 */
export async function refreshAccessToken(
  deps: TokenVaultDeps,
  connectionId: string,
  options: { freshFor: (s: StoredSecret | undefined) => boolean; wait: boolean },
): Promise<RefreshResult> {
  const waitUntil = deps.clock.now().getTime() + REFRESH_LEASE_MS;
  for (;;) {
    const attempt = await refreshOnce(deps, connectionId, options.freshFor);
    if (attempt.kind !== 'busy' || !options.wait) return attempt;
    if (deps.clock.now().getTime() > waitUntil)
      throw new UnavailableError('The connection is being renewed by another request; try again in a moment.', {
        expose: true,
      });
    await sleep(WAIT_STEP_MS);
  }
}

async function refreshOnce(
  deps: TokenVaultDeps,
  connectionId: string,
  freshFor: (s: StoredSecret | undefined) => boolean,
): Promise<RefreshResult> {
  // The connection first, then its secrets: each read sees what had committed when it began, so the
  // secrets are never older than the connection. Read side by side, a winner's refresh could commit
  // between them: its new version with the old tokens, and this caller would lease that version and
  // spend the rotated-out refresh token (the provider then ends the grant).
  const connection = await findConnectionById(deps.pool, connectionId);
  const secrets = await findSecrets(deps.pool, connectionId);
  const access = secrets.find((s) => s.kind === 'access_token');
  const refresh = secrets.find((s) => s.kind === 'refresh_token');
  if (!connection || !access || !usableStates.has(connection.state)) return { kind: 'reconnect' };
  const unopenable = secrets.find((s) => keyMissing(deps.box, s));
  if (unopenable) {
    // Another live instance holds its key: a rotation (or a rollback) is rolling out, and the value
    // is that instance's to open. Nothing is changed; the call may be tried again.
    if (deps.box.heldByLive(unopenable.keyId))
      throw new UnavailableError(
        `This connection's tokens are sealed under key ${unopenable.keyId}, which this instance does not hold yet: a key rotation is rolling out. Try again in a moment.`,
        { expose: true },
      );
    // No live instance holds it: the user connects again, and the new grant replaces these values.
    // They are kept, never deleted here: a value under a key id this instance does not know may be
    // one an instance about to start can open.
    await endConnection(deps, connection, 'key_missing', (tx) =>
      recordUnopenable(tx, deps, secrets).then(() => undefined),
    );
    return { kind: 'reconnect' };
  }
  // The winner of a race stored fresh tokens meanwhile.
  if (freshFor(access)) return { kind: 'token', token: openSecret(deps.box, access), renewed: false };
  const client = deps.providers.get(connection.provider);
  if (!refresh || !client) {
    await endConnection(deps, connection, 'expired');
    return { kind: 'reconnect' };
  }
  const now = deps.clock.now();
  const leased = await moveConnection(deps.pool, {
    id: connection.id,
    event: 'refresh_started',
    version: connection.version,
    now,
    leaseUntil: new Date(now.getTime() + REFRESH_LEASE_MS),
  });
  if (!leased) return { kind: 'busy' };

  const spent = openSecret(deps.box, refresh);
  let tokens: ProviderTokens;
  try {
    tokens = await client.refresh(spent, leased.issuer);
  } catch (err) {
    // The provider's authorization server is no longer the grant's: nothing was sent, and the grant
    // is never sent to another server; the user connects again once an operator re-pinned.
    if (err instanceof IssuerChangedError) {
      await endConnection(deps, leased, 'issuer_changed');
      return { kind: 'reconnect' };
    }
    // invalid_grant surfaces as invalid_input: the grant is gone, the user must connect again.
    if (err instanceof AppError && err.code === 'invalid_input') {
      await endConnection(deps, leased, 'refresh_refused');
      return { kind: 'reconnect' };
    }
    await moveConnection(deps.pool, {
      id: leased.id,
      event: 'refresh_failed',
      version: leased.version,
      now: deps.clock.now(),
    });
    throw err;
  }
  reachFaultPoint('refresh.before_store');
  const stored = await withTransaction(deps.pool, async (tx) => {
    const done = await moveConnection(tx, {
      id: leased.id,
      event: 'refreshed',
      version: leased.version,
      now: deps.clock.now(),
    });
    // The lease ran out and another instance took it over: its tokens win; these are dropped.
    if (!done) return false;
    await storeTokens(tx, deps, secretOwnerOf(leased), tokens, undefined);
    await record(tx, deps, leased, 'refreshed', { rotated: tokens.refreshToken !== spent });
    return true;
  });
  return stored ? { kind: 'token', token: tokens.accessToken, renewed: true } : { kind: 'busy' };
}

/** Moves the connection to `needs_reauth` by `event`, forgets its tokens, and records why, in one transaction. */
async function endConnection(
  deps: TokenVaultDeps,
  connection: ConnectionRecord,
  event: Extract<ConnectionEvent, 'key_missing' | 'expired' | 'refresh_refused' | 'issuer_changed'>,
  forget: (tx: Queryable) => Promise<void> = (tx) => deleteSecrets(tx, connection.id),
): Promise<void> {
  await withTransaction(deps.pool, async (tx) => {
    const moved = await moveConnection(tx, { id: connection.id, event, now: deps.clock.now() });
    await forget(tx);
    // recordUnopenable records a missing key itself, naming the key.
    if (moved && event !== 'key_missing') await record(tx, deps, connection, event, {});
    if (moved) await enqueueEvent(tx, needsReauthEvent(moved, event, deps.clock.now()));
  });
}

/** A connection's move, on the ledger of the flow that made it (a connection made before flows were kept has none). */
async function record(
  tx: Queryable,
  deps: Pick<TokenVaultDeps, 'clock'>,
  connection: ConnectionRecord,
  event: ConnectionEvent,
  evidence: Record<string, unknown>,
): Promise<void> {
  if (connection.navigationId === undefined) return;
  await appendObservations(tx, [
    {
      navigationId: connection.navigationId,
      event: ledgerEventOf(event),
      actor: 'system:vault',
      evidence: { connectionId: connection.id, provider: connection.provider, ...evidence },
      at: deps.clock.now(),
    },
  ]);
}
