import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { needsReauthEvent } from '../events/webhookEvent.js';
import { enqueueEvent } from '../events/webhookOutboxRepo.js';
import { appendObservations } from '../ledger/ledgerRepo.js';
import { fromStatesOf, ledgerEventOf } from '../secrets/connectionStates.js';
import { findProviderConnections, moveConnection } from '../secrets/connectionsRepo.js';
import { deleteSecrets } from '../secrets/secretsRepo.js';
import { markChanged, type IssuerPin } from '../oauth/issuerPinsRepo.js';

/** What discovery named, against the pin: the issuer, or the same issuer with other endpoints. */
export interface IssuerChange {
  provider: string;
  pin: Omit<IssuerPin, 'changedTo' | 'changedAt'>;
  /** The issuer discovery named (the pinned one itself when only its endpoints changed). */
  named: string;
}

/**
 * Records an authorization server change in one transaction: the pin keeps its server and notes
 * the one named (`broker upstreams check`, /ops, the metric read it), and every live connection of
 * the provider moves to `needs_reauth` (`issuer_changed`), its tokens forgotten, the move on its
 * flow's ledger and a `connection.needs_reauth` webhook event. Nothing is sent to either server:
 * the tokens belong to the pinned one, which may be the one that was compromised.
 */
export async function recordIssuerChange(pool: Pool, change: IssuerChange, now: Date): Promise<void> {
  await withTransaction(pool, async (tx) => {
    await markChanged(tx, change.pin, change.named, now);
    const live = await findProviderConnections(tx, change.provider, fromStatesOf('issuer_changed'));
    for (const connection of live) {
      const moved = await moveConnection(tx, { id: connection.id, event: 'issuer_changed', now });
      if (!moved) continue;
      await deleteSecrets(tx, connection.id);
      if (connection.navigationId !== undefined)
        await appendObservations(tx, [
          {
            navigationId: connection.navigationId,
            event: ledgerEventOf('issuer_changed'),
            actor: 'system:vault',
            evidence: {
              connectionId: connection.id,
              provider: connection.provider,
              pinnedIssuer: change.pin.issuer,
              namedIssuer: change.named,
            },
            at: now,
          },
        ]);
      await enqueueEvent(tx, needsReauthEvent(moved, 'issuer_changed', now));
    }
  });
}
