import { samePrincipal, type Principal } from '../auth/principal.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../errors/appError.js';
import { enqueueEvent } from '../events/webhookOutboxRepo.js';
import { appendObservations } from '../ledger/ledgerRepo.js';
import type { ProviderClient } from '../oauth/providerClient.js';
import type { HeldTokens, Revocation } from '../oauth/tokenRevocation.js';
import { disconnectedState, ledgerEventOf } from '../secrets/connectionStates.js';
import { findConnectionById, moveConnection, type ConnectionRecord } from '../secrets/connectionsRepo.js';
import { openSecret } from '../secrets/sealedTokens.js';
import { deleteSecrets, findSecrets, type StoredSecret } from '../secrets/secretsRepo.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';

export interface DisconnectDeps {
  pool: Pool;
  box: SecretBox;
  clock: Clock;
  providers: ReadonlyMap<string, ProviderClient>;
  logger: Logger;
}

export interface DisconnectInput {
  connectionId: string;
  /** When given, the connection must be this subject's (a user disconnecting their own); else not found. */
  subject?: Principal;
  /** Who asked, as the ledger names actors: `browser:<sub>`, `operator:<sub>`, `cli:<sub>`. */
  actor: string;
  /** Why, recorded with it (3 to 500 characters). */
  reason: string;
}

export interface DisconnectResult {
  connectionId: string;
  provider: string;
  /** Whether the provider revoked the grant too: the broker's tokens are gone in every case. */
  atProvider: Revocation['outcome'];
  /** Unless revoked: "not revoked at the provider (…)", a few fixed words, never a token. */
  detail?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Disconnects a connection: the provider is asked to revoke its grant (oauth/tokenRevocation.ts),
 * with no transaction open, then in one transaction the connection moves to `revoked` (a
 * compare-and-set on the version read before the call), its tokens are deleted, the outcome is
 * recorded on the ledger of the flow that made it and `connection.revoked` is written for the
 * webhook (src/events/). The tokens are deleted whatever the provider
 * answered, or if it could not be reached; the result says so. If a refresh or a reconnect stored
 * other tokens meanwhile, those are revoked too, once, and the move then applies whatever the
 * version. Throws NotFoundError (no such connection, or not `subject`'s) and ConflictError
 * (already disconnected).
 */
export async function disconnectConnection(deps: DisconnectDeps, input: DisconnectInput): Promise<DisconnectResult> {
  const { connectionId, actor } = input;
  const reason = input.reason.trim();
  // The routes and the CLI parse what they are sent; this holds the rule for every caller.
  if (!UUID.test(connectionId)) throw new NotFoundError('No such connection.');
  if (reason.length < 3 || reason.length > 500)
    throw new InvalidInputError('Give a reason of 3 to 500 characters: it is recorded.');
  for (let attempt = 0; ; attempt++) {
    const connection = await findConnectionById(deps.pool, connectionId);
    if (!connection || (input.subject && !samePrincipal(connection.subject, input.subject)))
      throw new NotFoundError('No such connection.');
    if (connection.state === disconnectedState) throw new ConflictError('This connection is already disconnected.');
    const secrets = await findSecrets(deps.pool, connection.id);
    const revocation = await revokeHeld(deps, connection, secrets);
    const result: DisconnectResult = {
      connectionId,
      provider: connection.provider,
      atProvider: revocation.outcome,
      ...(revocation.outcome !== 'revoked' && { detail: notRevokedDetail(revocation) }),
    };
    const moved = await withTransaction(deps.pool, async (tx) => {
      const now = deps.clock.now();
      const done = await moveConnection(tx, {
        id: connection.id,
        event: 'revoked',
        now,
        ...(attempt === 0 && { version: connection.version }),
      });
      if (!done) return false;
      await deleteSecrets(tx, connection.id);
      await enqueueEvent(tx, {
        type: 'connection.revoked',
        data: {
          connectionId,
          provider: connection.provider,
          subject: { iss: connection.subject.iss, sub: connection.subject.sub },
        },
        occurredAt: now,
      });
      const navigationId = connection.navigationId ?? secrets.find((s) => s.navigationId)?.navigationId;
      if (navigationId !== undefined)
        await appendObservations(tx, [
          {
            navigationId,
            event: ledgerEventOf('revoked'),
            actor,
            evidence: {
              connectionId,
              provider: connection.provider,
              reason,
              atProvider: revocation.outcome,
              ...(revocation.outcome === 'revoked' && { token: revocation.token }),
              ...(result.detail !== undefined && { detail: result.detail }),
            },
            at: now,
          },
        ]);
      return true;
    });
    if (!moved && attempt === 0) continue; // changed meanwhile: read it again, revoke what it holds now
    if (!moved) throw new ConflictError('This connection is already disconnected.');
    deps.logger.info(
      { connectionId, provider: connection.provider, actor, atProvider: result.atProvider, detail: result.detail },
      'connection disconnected',
    );
    return result;
  }
}

/** The stored tokens opened and handed to the provider's revocation; a token that cannot be opened is not sent. */
async function revokeHeld(
  deps: DisconnectDeps,
  connection: ConnectionRecord,
  secrets: readonly StoredSecret[],
): Promise<Revocation> {
  const client = deps.providers.get(connection.provider);
  if (!client) return { outcome: 'failed', reason: 'the provider is no longer configured' };
  let held: HeldTokens;
  try {
    const open = (kind: StoredSecret['kind']) => {
      const secret = secrets.find((s) => s.kind === kind);
      return secret && openSecret(deps.box, secret);
    };
    held = { accessToken: open('access_token'), refreshToken: open('refresh_token') };
  } catch {
    // A key SECRET_KEYS no longer holds, or a tampered value (crypto/secretBox.ts): nothing to send.
    return { outcome: 'failed', reason: 'the stored token could not be opened' };
  }
  return client.revoke(held);
}

function notRevokedDetail(revocation: Exclude<Revocation, { outcome: 'revoked' }>): string {
  return revocation.outcome === 'not_supported'
    ? 'not revoked at the provider (it offers no revocation the broker can call)'
    : `not revoked at the provider (${revocation.reason})`;
}
