import { samePrincipal, type Principal } from '../auth/principal.js';
import type { Queryable } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { advance, type Actor } from './advance.js';
import type { BrokerDeps } from './brokerDeps.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { lockNavigation, lockOpenNavigationsFor } from './navigationRepo.js';
import { canTransition } from '../flow/navigationStates.js';

const EVENT = 'connection_present';

/**
 * Once a connection for (principal, provider) is verified, every other open
 * flow of that pair has its requirement met too. They are settled in the
 * verifying transaction (REQUIREMENT_VERIFIED, evidence naming the flow that
 * connected), so each one's operation is accepted once, through its own
 * lineage and receipt, and no caller performs it beside a flow still open.
 * Waiting calls on any instance are woken on COMMIT.
 */
export async function settleSiblingFlows(
  tx: Queryable,
  deps: Pick<BrokerDeps, 'signal'>,
  verified: NavigationRecord,
  by: Actor,
): Promise<NavigationRecord[]> {
  const open = await lockOpenNavigationsFor(tx, verified.subject, verified.provider, verified.id);
  const settled: NavigationRecord[] = [];
  for (const sibling of open) {
    if (!canTransition(sibling.status, EVENT)) continue;
    settled.push(await advance(tx, sibling, EVENT, { ...by, evidence: { ...by.evidence, connectedBy: verified.id } }));
    await deps.signal.notify(tx, sibling.id);
  }
  return settled;
}

/**
 * Settles one open flow whose principal is already connected to its provider
 * (the caller has just read a token for the pair); returns the flow as it is
 * now, settled or not.
 */
export async function settleConnectedFlow(
  deps: Pick<BrokerDeps, 'pool' | 'clock' | 'signal'>,
  navigationId: string,
  principal: Principal,
): Promise<NavigationRecord | undefined> {
  return withTransaction(deps.pool, async (tx) => {
    const locked = await lockNavigation(tx, navigationId);
    if (!locked || !samePrincipal(locked.subject, principal) || !canTransition(locked.status, EVENT)) return locked;
    const settled = await advance(tx, locked, EVENT, {
      actor: `mcp:${principal.sub}`,
      now: deps.clock.now(),
      evidence: { connectedBy: 'existing connection' },
    });
    await deps.signal.notify(tx, settled.id);
    return settled;
  });
}
