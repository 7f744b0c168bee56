import type { BusinessOutcome } from '../../broker/acceptOriginalOperation.js';
import type { BrokerDeps } from '../../broker/brokerDeps.js';
import type { ConnectionAccess } from '../../broker/connectionAccess.js';
import type { ConnectionChoice } from '../../broker/connectionChoice.js';
import type { StoredAccess } from '../../broker/forgetConnection.js';
import type { NavigationRequest } from '../../broker/startNavigation.js';
import type { NavigationRecord } from '../../flow/navigationRecord.js';
import type { Lineage } from '../../flow/navigationStates.js';
import type { ConnectionRecord } from '../../secrets/connectionsRepo.js';
import type { TokenVaultDeps } from '../../secrets/tokenVault.js';
import type { ToolContext } from '../defineTool.js';
import type { FormGuard } from '../formGuard.js';
import type { ElicitFormRequest, ToolCallResult } from '../protocol.js';

/**
 * What the call driver needs (callDriver.ts): with the form guard, which admits the account question
 * before it is sent (formGuard.ts). Without one, a call that would ask is told to name the account instead.
 */
export interface CallDriverDeps {
  broker: BrokerDeps;
  vault: TokenVaultDeps;
  forms?: FormGuard;
}

/** One call of a tool that needs a third-party connection: what every lineage (both eras, and the re-drive) runs. */
export interface ConnectionCall {
  tool: string;
  provider: string;
  /** The provider's scopes the operation needs: a connection granted fewer asks for a second consent. */
  scopes: readonly string[];
  /** What the operation is for, shown to the user with the link ("create the report …"). */
  purpose: string;
  requestDigest: string;
  /** The parsed arguments: sealed with the receipt, so an unknown outcome can be re-driven. */
  arguments: Record<string, unknown>;
  /** Which of the user's connections to the provider it runs on, as its `account` argument names it (none: the rule decides). */
  choice?: ConnectionChoice;
  /** Whether an unknown outcome may be performed again on its own (the provider dedupes by the key). */
  replayable: boolean;
  /** `direct`: performed for the host's request itself (no receipt), which may then ask the user on the way. */
  perform(access: StoredAccess, idempotencyKey: string, direct?: DirectPerform): Promise<BusinessOutcome>;
  render(outcome: BusinessOutcome): ToolCallResult;
}

/** A call performed while the host request it answers is there, which may then ask the user on the way. */
export interface DirectPerform {
  ctx: ToolContext;
  /** 2025-11-25: asks the host on this call's stream (nested); its JSON-RPC answer, undefined when none came in time. */
  ask?: (method: string, params: Record<string, unknown>) => Promise<Record<string, unknown> | undefined>;
  /**
   * Performed for an accepted operation, through this receipt: a question relayed to the host without
   * `ask` is thrown as InputRequiredError (nothing done, no outcome recorded), its state naming the receipt.
   */
  receiptId?: string;
}

/** How the host's request may be asked on its stream (2025-11-25): the question, and its bound. */
export interface HostStream {
  ask: NonNullable<DirectPerform['ask']>;
  waitMs: number;
}

/**
 * How a wire carries the call, as data for the driver: the lineage its flows start in, how long a
 * step waits for the user, and the little each era says in its own terms. Everything else is the driver's.
 */
export interface CallEra {
  lineage: Lineage;
  /** How long a step waits on the completion signal for the user to finish connecting. */
  waitMs: number;
  /** The host's stream, where the provider's own questions are asked (2025-11-25); none on 2026-07-28. */
  stream?: HostStream;
  /** Ends a wait early: the legacy session's end. */
  closing?: AbortSignal;
  /** The JSON-RPC id a nested acceptance records. */
  jsonrpcId?: string;
  /** How the host goes on after cancelling a connect request, in the wire's terms. */
  retryHint: string;
  /** The error for a host that cannot be sent a link (each wire has its own). */
  noUrlElicitation(call: ConnectionCall): Error;
  /** Just before a step waits for the user (a fault point of the crash suite). */
  waiting?(): void;
  /** A flow this call asked about is verified, before its operation is accepted or read (2025-11-25 says so to the host, once). */
  verified?(navigationId: string): void;
}

/** A question the driver needs the host to put to the user, and what the answer continues. */
export type CallQuestion =
  | { kind: 'connect'; navigation: NavigationRecord; url: string; message: string }
  | { kind: 'account'; form: ElicitFormRequest; candidates: readonly ConnectionRecord[] };

/** Why a call has no outcome yet; the host calls again (2026-07-28) or is told (2025-11-25). */
export type CallWait =
  { reason: 'user'; navigation: NavigationRecord } | { reason: 'approval'; approvalId: string; message: string };

/** Where a call stands after one step of the driver. */
export type CallStep =
  | { kind: 'done'; result: ToolCallResult }
  | { kind: 'ask'; question: CallQuestion }
  | { kind: 'pending'; navigationId: string; wait: CallWait };

export const done = (result: ToolCallResult): CallStep => ({ kind: 'done', result });

/** Whether a flow was started by the OAuth client this call comes through (undefined matches only undefined). */
export function sameClient(
  navigation: Pick<NavigationRecord, 'clientId'>,
  ctx: Pick<ToolContext, 'clientId'>,
): boolean {
  return (navigation.clientId ?? '') === (ctx.clientId ?? '');
}

/** The navigation a call of this tool starts, in `lineage`. */
export function navigationRequest(ctx: ToolContext, call: ConnectionCall, lineage: Lineage): NavigationRequest {
  return {
    principal: ctx.principal,
    clientId: ctx.clientId,
    tool: call.tool,
    requestDigest: call.requestDigest,
    provider: call.provider,
    purpose: call.purpose,
    lineage,
  };
}

/** `"repo", "gist"`: scopes as the user is shown them (each quoted, as the provider names it). */
export const scopeList = (scopes: readonly string[]): string => scopes.map((s) => `"${s}"`).join(', ');

/**
 * The first sentence of a connect request, on every lineage: connect, or, for a connection that lacks
 * scopes the call needs, grant them on the same account (a second consent, for the union).
 */
export function connectRequestText(
  call: Pick<ConnectionCall, 'purpose'>,
  providerName: string,
  targetHost: string,
  access: ConnectionAccess,
): string {
  return access.kind === 'scopes_missing'
    ? `To ${call.purpose}, your ${providerName} account must also grant ${scopeList(access.missing)} (${targetHost}); your connection stays the same account.`
    : `To ${call.purpose}, connect your ${providerName} account (${targetHost}).`;
}
