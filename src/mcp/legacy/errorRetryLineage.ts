import type { BrokerDeps } from '../../broker/brokerDeps.js';
import type { NavigationRecord } from '../../broker/navigationRecord.js';
import { findLatestForOperation } from '../../broker/navigationRepo.js';
import type { Principal } from '../../auth/principal.js';
import type { ConnectionCall } from '../connectionTool.js';

const RETRYABLE = new Set(['REQUIREMENT_VERIFIED', 'ERROR_RETRY_ELIGIBLE', 'OPTIONAL_CLIENT_RETRY', 'RETRY_RESPONSE_ACCEPTED']);

/**
 * The -32042 lineage (design §2): a legacy retry carries no token of its
 * own, so an identical call (same principal, tool and argument digest) that
 * arrives while the latest -32042 navigation for it is verified, within the
 * retry window, is that navigation's retry: it is accepted once, and any
 * later identical call in the window gets the recorded outcome.
 */
export async function findErrorRetryNavigation(broker: BrokerDeps, principal: Principal, call: ConnectionCall, windowMs: number): Promise<NavigationRecord | undefined> {
  const latest = await findLatestForOperation(broker.pool, { subjectIss: principal.iss, subjectSub: principal.sub, tool: call.tool, requestDigest: call.requestDigest, lineage: 'error_retry' });
  if (!latest || !RETRYABLE.has(latest.status)) return undefined;
  return broker.clock.now().getTime() - latest.updatedAt.getTime() <= windowMs ? latest : undefined;
}
