import { advanceIfAllowed } from '../../broker/advance.js';
import { InvalidInputError } from '../../errors/appError.js';
import type { Pool } from '../../db/pool.js';
import type { NavigationRecord } from '../../flow/navigationRecord.js';
import { completeResult } from '../defineTool.js';
import { ElicitResultSchema } from '../elicitationForms.js';
import type { ToolCallResult } from '../protocol.js';

/** What the host's answer to a connect link leaves the call: go on (accept), or its result. */
export type ConnectAnswer =
  { kind: 'accepted'; navigation: NavigationRecord | undefined } | { kind: 'ended'; result: ToolCallResult };

/**
 * The host's answer to a connect link (an elicitation result, MCP "Elicitation"), the same on every
 * lineage: `accept` is the user's consent only, as completion is the verified callback; `decline`
 * ends the flow and the call, a complete refusal that is not an error; `cancel`, or no answer in time,
 * ends the call only: the flow and its link stay, and a retry continues it (`retry` says how, in the
 * wire's terms). A malformed answer changes nothing and is refused.
 */
export async function connectAnswerOf(
  broker: { pool: Pool; clock: { now(): Date } },
  navigation: NavigationRecord,
  raw: unknown,
  context: { actor: string; purpose: string; retry: string },
): Promise<ConnectAnswer> {
  if (raw === undefined) return { kind: 'ended', result: cancelledResult(navigation, context, 'was not answered') };
  const reply = ElicitResultSchema.safeParse(raw);
  if (!reply.success)
    throw new InvalidInputError(
      'The answer to the connect request is not an elicitation result ({action}). Nothing was done.',
    );
  if (reply.data.action === 'decline') {
    await advanceIfAllowed(broker, navigation.id, 'host_decline', context.actor, navigation);
    return { kind: 'ended', result: declinedResult(context.purpose) };
  }
  if (reply.data.action === 'cancel')
    return { kind: 'ended', result: cancelledResult(navigation, context, 'was cancelled') };
  const seen = await advanceIfAllowed(broker, navigation.id, 'host_accept', context.actor, navigation);
  return { kind: 'accepted', navigation: seen };
}

/** A declined connection, on every lineage: complete, not an error, nothing done. */
export const declinedResult = (purpose: string): ToolCallResult =>
  completeResult(`You declined to connect; ${purpose} was not done.`, { status: 'declined' });

function cancelledResult(
  navigation: NavigationRecord,
  context: { purpose: string; retry: string },
  how: string,
): ToolCallResult {
  const expiresAt = navigation.expiresAt.toISOString();
  return completeResult(
    `Connecting ${how}; ${context.purpose} was not done. The link stays valid until ${expiresAt}: ${context.retry}`,
    { status: 'cancelled', expiresAt },
  );
}
