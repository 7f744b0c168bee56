import {
  InputRequiredError,
  runAcceptedOperation,
  type BusinessOutcome,
} from '../../broker/acceptOriginalOperation.js';
import { providerNameOf } from '../../broker/brokerDeps.js';
import { connectionAccessFor } from '../../broker/connectionAccess.js';
import { performOrForget, reconnectOutcome, reconnectReasonOf, touchDue } from '../../broker/forgetConnection.js';
import { recordReceiptConnection } from '../../broker/receiptConnectionRepo.js';
import type { OperationReceipt } from '../../broker/receiptRepo.js';
import { touchConnectionAlongside, type ConnectionRecord } from '../../secrets/connectionsRepo.js';
import { namingConnection } from './accountChoice.js';
import { errorResult, type ToolContext } from '../defineTool.js';
import type { ToolCallResult } from '../protocol.js';
import {
  scopeList,
  type CallDriverDeps,
  type ConnectionCall,
  type DirectPerform,
  type HostStream,
} from './connectionCall.js';

/**
 * Performs an accepted operation through its receipt (once, whichever lineage).
 * A 401 from the provider, or no connection left by then, means the provider
 * did nothing: that is recorded as the receipt's final outcome, and the host is
 * told to call again after reconnecting, which is a new operation. So this
 * receipt must never stay pending: the reconcile sweep, or a retry, would
 * otherwise perform it with the new token after the user already did it again.
 */
export async function runAccepted(
  deps: Pick<CallDriverDeps, 'broker' | 'vault'>,
  ctx: ToolContext,
  call: ConnectionCall,
  receipt: OperationReceipt,
  stream?: HostStream,
): Promise<ToolCallResult> {
  let used: ConnectionRecord | undefined;
  let outcome: BusinessOutcome;
  try {
    outcome = await runAcceptedOperation(
      deps.broker,
      receipt,
      async (key, hold) => {
        // Accepted already: nobody is asked which account any more; the default runs it (connectionChoice.ts).
        const access = await connectionAccessFor(deps.vault, ctx.principal, call.provider, call.scopes, {
          ...call.choice,
          ask: false,
        });
        if (access.kind !== 'connected' && access.kind !== 'scopes_missing')
          return reconnectOutcome(call.provider, 'not_connected');
        // The provider would refuse it (or, worse, do part of it): not done, final, and said so.
        if (access.kind === 'scopes_missing') return reconnectOutcome(call.provider, 'scopes_missing', access.missing);
        used = access.connection;
        // The receipt names the connection, and the connection notes its use, in one statement.
        const now = deps.broker.clock.now();
        const touch = touchDue(access.connection, now) ? [touchConnectionAlongside(access.connection.id, now)] : [];
        await recordReceiptConnection(deps.broker.pool, receipt.id, access.connection.id, touch);
        // The host's request is here: the provider may ask it more (nested on its stream, the lease held
        // while the user answers; else relayed as this request's answer, which is then no outcome).
        const direct: DirectPerform = {
          ctx,
          receiptId: receipt.id,
          ...(stream && {
            ask: async (method, params) => {
              await hold(stream.waitMs);
              return stream.ask(method, params);
            },
          }),
        };
        return performOrForget(deps.vault, access, (live) => call.perform(live, key, direct), true);
      },
      deps.broker.retryWaitMs,
      false,
      call.replayable,
    );
  } catch (err) {
    if (err instanceof InputRequiredError) return err.relayed as ToolCallResult;
    throw err;
  }
  const reason = reconnectReasonOf(outcome);
  if (!reason) return used ? namingConnection(call.render(outcome), used) : call.render(outcome);
  const name = providerNameOf(deps.broker, call.provider);
  if (reason === 'scopes_missing') {
    const missing = (outcome.outcome?.['missing'] as string[] | undefined) ?? [];
    const text = `Your ${name} connection was not granted ${scopeList(missing)}, which ${call.purpose} needs, so it was not done, and it never will be from this call. Call the tool again, as a new call, to grant it; it is then done once.`;
    return errorResult(text, { status: 'scopes_missing', ...outcome.outcome });
  }
  const text = `Your connection to ${name} is no longer valid (it was refused or removed), so ${call.purpose} was not done, and it never will be from this call. Call the tool again, as a new call, to connect again; it is then done once.`;
  return errorResult(text, { status: 'reconnect_required', ...outcome.outcome });
}
