import { disconnectConnection, type DisconnectDeps, type DisconnectResult } from '../broker/disconnectConnection.js';
import { recordOperatorAction } from '../ledger/operatorRepo.js';
import type { OperatorAct } from './recovery.js';

/**
 * An operator disconnects someone's connection (CLI and /ops alike): disconnectConnection with the
 * operator as actor (the provider asked to revoke, the tokens deleted, the flow's ledger told), then
 * `revoke_connection` in operator_actions with what the provider made of it, so the action is on
 * record even for a connection whose flow is gone.
 */
export async function revokeConnection(
  deps: DisconnectDeps,
  connectionId: string,
  act: OperatorAct,
): Promise<DisconnectResult> {
  const result = await disconnectConnection(deps, { connectionId, actor: act.actor, reason: act.reason });
  await recordOperatorAction(deps.pool, 'revoke_connection', act.reason, act.actor, { ...result }, deps.clock.now());
  return result;
}

/** What an operator is told, in one sentence: the broker's side is always done; the provider's may not be. */
export function describeRevocation(result: DisconnectResult): string {
  const done = `Connection ${result.connectionId} (${result.provider}) is revoked: its tokens are deleted and the user must connect again.`;
  if (result.atProvider === 'revoked') return `${done} ${result.provider} revoked the grant too.`;
  return `${done} ${capitalised(result.detail ?? 'not revoked at the provider')}: revoke the app's access there.`;
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
