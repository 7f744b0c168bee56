import { samePrincipal, type Principal } from '../auth/principal.js';
import type { Alongside } from '../db/alongside.js';
import type { Queryable } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { advance, advanceEach, type Actor } from './advance.js';
import type { BrokerDeps } from './brokerDeps.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { lockNavigation } from './navigationRepo.js';
import { canTransition, type NavigationEvent } from '../flow/navigationStates.js';

const EVENT: NavigationEvent = 'connection_present';

/**
 * Verifies the flow whose callback stored a connection for (principal, provider) and settles every
 * other open flow of that pair by it, in the verifying transaction (REQUIREMENT_VERIFIED, evidence
 * naming the flow that connected), so each one's operation is accepted once, through its own
 * lineage and receipt, and no caller performs it beside a flow still open. They move in one
 * statement with their ledger entries, and that statement signals them: waiting calls on any
 * instance are woken on COMMIT (migrations/0023_wake_waiters.sql). `open`: the pair's open flows,
 * the caller's transaction has locked in id order (lockOpenNavigationsFor, before it wrote
 * anything), `navigation` among them. `alongside`: what the callback stores, in the same statement.
 */
export async function verifyAndSettle(
  tx: Queryable,
  navigation: NavigationRecord,
  events: readonly NavigationEvent[],
  by: Actor,
  open: readonly NavigationRecord[],
  alongside: readonly Alongside[] = [],
): Promise<{ verified: NavigationRecord; settled: NavigationRecord[] }> {
  const siblingBy = { ...by, evidence: { ...by.evidence, connectedBy: navigation.id } };
  const [verified, ...settled] = await advanceEach(
    tx,
    [
      { navigation, events, by },
      ...open
        .filter((sibling) => sibling.id !== navigation.id && canTransition(sibling.status, EVENT))
        .map((sibling) => ({ navigation: sibling, events: EVENT, by: siblingBy })),
    ],
    alongside,
  );
  return { verified: verified!, settled };
}

/**
 * Settles one open flow whose principal is already connected to its provider
 * (the caller has just read a token for the pair); returns the flow as it is
 * now, settled or not.
 */
export async function settleConnectedFlow(
  deps: Pick<BrokerDeps, 'pool' | 'clock'>,
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
    return settled;
  });
}
