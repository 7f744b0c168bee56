import type { BrokerDeps } from '../../broker/brokerDeps.js';
import type { NavigationRecord } from '../../flow/navigationRecord.js';
import { findLatestForOperation } from '../../broker/navigationRepo.js';
import { acceptedStates, openStates, verifiedStates } from '../../flow/navigationStates.js';
import { sameClient, type ConnectionCall } from '../calls/connectionCall.js';
import type { ToolContext } from '../defineTool.js';

// The MRTR path keeps its own retries (requestState); a legacy call never joins an MRTR acceptance.
const MRTR_ACCEPTED = acceptedStates.mrtr;

/**
 * A legacy call carries no requestState of its own, so an identical
 * call (same principal and client, tool and argument digest) is the same operation as
 * the newest navigation for it while that one is still open, or settled
 * within the retry window, in either lineage. The caller joins it instead of
 * acting again: the -32042 retry is accepted once; anything else waits for,
 * or reads, the recorded outcome.
 */
export async function findSameOperation(
  broker: BrokerDeps,
  ctx: Pick<ToolContext, 'principal' | 'clientId'>,
  call: ConnectionCall,
  windowMs: number,
): Promise<NavigationRecord | undefined> {
  const { principal } = ctx;
  // Another client of the same user never joins this client's operation.
  const recent = (
    await findLatestForOperation(broker.pool, {
      subjectIss: principal.iss,
      subjectSub: principal.sub,
      tool: call.tool,
      requestDigest: call.requestDigest,
    })
  ).filter((n) => sameClient(n, ctx));
  const now = broker.clock.now().getTime();
  // A flow the user finished wins over a newer one still waiting (an early retry may have started it).
  return (
    recent.find(
      (n) => verifiedStates.has(n.status) && n.status !== MRTR_ACCEPTED && now - n.updatedAt.getTime() <= windowMs,
    ) ?? recent.find((n) => openStates.has(n.status) && n.expiresAt.getTime() > now)
  );
}
