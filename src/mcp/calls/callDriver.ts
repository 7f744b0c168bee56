import { randomUUID } from 'node:crypto';
import { acceptOriginalOperation } from '../../broker/acceptOriginalOperation.js';
import { advanceIfAllowed } from '../../broker/advance.js';
import { approvalMessage, awaitApproval, needsApproval } from '../../broker/approvals.js';
import { providerNameOf } from '../../broker/brokerDeps.js';
import { connectionAccessFor, type ConnectionAccess } from '../../broker/connectionAccess.js';
import type { ConnectionChoice } from '../../broker/connectionChoice.js';
import { performOrForget, reconnectReasonOf } from '../../broker/forgetConnection.js';
import { findNavigationById, findReissueOf } from '../../broker/navigationRepo.js';
import { findReceiptByNavigation } from '../../broker/receiptRepo.js';
import { settleConnectedFlow } from '../../broker/settleOpenFlows.js';
import { findReusableNavigation, operationKey, startNavigation } from '../../broker/startNavigation.js';
import type { NavigationRecord } from '../../flow/navigationRecord.js';
import { ConflictError } from '../../errors/appError.js';
import { declinedStates, RECONNECT, State, verifiedStates, type NavigationState } from '../../flow/navigationStates.js';
import type { ConnectionRecord } from '../../secrets/connectionsRepo.js';
import {
  accountAnswerOf,
  accountQuestion,
  candidateLabels,
  namingConnection,
  unknownAccountResult,
} from './accountChoice.js';
import { connectAnswerOf, declinedResult } from './connectAnswer.js';
import { completeResult, errorResult, type ToolContext } from '../defineTool.js';
import { elicitationModes } from '../protocol.js';
import { runAccepted } from './acceptedCall.js';
import {
  connectRequestText,
  done,
  navigationRequest,
  type CallDriverDeps,
  type CallEra,
  type CallStep,
  type ConnectionCall,
} from './connectionCall.js';

// The one driver of a call that may need a connection or the user's input, for every wire: each
// function is a step that ends in a result (done), a question for the host (ask), or a wait (pending),
// and the wires (mcp/connectionTool.ts for 2026-07-28, mcp/legacy/legacyCall.ts for 2025-11-25) only
// carry questions and answers. Acceptance itself is acceptOriginalOperation's, once, on any lineage.

/** The call's first step: on a usable connection now, or the question that leads to one. */
export async function startCall(
  deps: CallDriverDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  era: CallEra,
): Promise<CallStep> {
  return fromAccess(deps, ctx, call, era, await accessWithOpenFlow(deps, ctx, call, era));
}

/**
 * The user's answer to the account question: the chosen connection is used for this call only.
 * `offered`, the candidates the question listed, as connected now.
 */
export async function chooseAccount(
  deps: CallDriverDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  era: CallEra,
  offered: readonly ConnectionRecord[],
  raw: unknown,
): Promise<CallStep> {
  const answer = accountAnswerOf(raw, offered);
  if (answer.kind !== 'chosen')
    return done(
      completeResult(`No account was chosen; ${call.purpose} was not done.`, {
        status: answer.kind === 'declined' ? 'declined' : 'cancelled',
      }),
    );
  const chosen = { ...call, choice: { ...call.choice, connectionId: answer.connectionId } };
  const access = await accessWithOpenFlow(deps, ctx, chosen, era);
  if (access.kind === 'connected') return runConnected(deps, ctx, chosen, era, access);
  // Changed meanwhile (refused, disconnected): asked again from what is usable now.
  return fromAccess(deps, ctx, call, era, access);
}

/** The host's answer to a connect request: ended (declined, cancelled), or the flow's settling. */
export async function answerConnect(
  deps: CallDriverDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  era: CallEra,
  navigation: NavigationRecord,
  raw: unknown,
): Promise<CallStep> {
  const answer = await connectAnswerOf(deps.broker, navigation, raw, {
    actor: `mcp:${ctx.principal.sub}`,
    purpose: call.purpose,
    retry: era.retryHint,
  });
  if (answer.kind === 'ended') return done(answer.result);
  return settle(deps, ctx, call, era, navigation.id, answer.navigation);
}

// A flow's settling asks nobody which account: whether the user is connected is the default's (or the named one's) answer.
const settling = (call: ConnectionCall): ConnectionChoice => ({ ...call.choice, ask: false });

/**
 * A flow of this call, again: its outcome once accepted, or its acceptance once verified, or a bounded
 * wait for the user (era.waitMs). `seen`, the flow as this request read it: reading it before its
 * receipt is safe, as a flow that moves on only moves towards its receipt. Seen verified, it needs no
 * receipt read: the acceptance finds any receipt under the flow's lock (acceptOriginalOperation).
 */
export async function settle(
  deps: CallDriverDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  era: CallEra,
  navigationId: string,
  seen?: NavigationRecord,
): Promise<CallStep> {
  const { broker } = deps;
  const read = seen?.id === navigationId ? seen : await findNavigationById(broker.pool, navigationId);
  // Verified already (accepted since, perhaps, by another call): the user finished, and the host is told.
  if (isVerified(read?.status)) era.verified?.(navigationId);
  if (read?.status !== State.REQUIREMENT_VERIFIED) {
    const receipt = await findReceiptByNavigation(broker.pool, navigationId);
    if (receipt) return done(await runAccepted(deps, ctx, call, receipt, era.stream));
  }
  const navigation = read!;
  if (declinedStates.has(navigation.status)) return done(declinedResult(call.purpose));
  if (navigation.status === State.REQUIREMENT_VERIFIED || navigation.status === State.OPERATION_REJECTED)
    return acceptFlow(deps, ctx, call, era, navigation);
  if (navigation.status === State.EXPIRED) {
    // An operator may have re-issued the link of an expired or stuck flow: the call follows it.
    const successor = await latestReissue(deps, navigationId);
    if (successor !== navigationId) return settle(deps, ctx, call, era, successor);
  }
  if (navigation.status === State.EXPIRED || navigation.expiresAt <= broker.clock.now()) {
    await advanceIfAllowed(broker, navigation.id, 'expire', `mcp:${ctx.principal.sub}`);
    const access = await connectionAccessFor(deps.vault, ctx.principal, call.provider, call.scopes, settling(call));
    return askToConnect(deps, ctx, call, era, access);
  }
  // Connected meanwhile through another flow (the settling in the callback missed one started
  // just after it): the requirement is met; settle this one rather than wait for a second callback.
  const now = await connectionAccessFor(deps.vault, ctx.principal, call.provider, call.scopes, settling(call));
  if (now.kind === 'connected') {
    const settled = await settleConnectedFlow(broker, navigationId, ctx.principal);
    if (settled?.status === State.REQUIREMENT_VERIFIED) {
      era.verified?.(navigationId);
      return acceptFlow(deps, ctx, call, era, settled);
    }
  }
  era.waiting?.();
  const verified = await broker.waits.run(ctx.principal, () =>
    broker.signal.waitFor(
      navigationId,
      era.waitMs,
      async () => isVerified((await findNavigationById(broker.pool, navigationId))?.status),
      era.closing,
    ),
  );
  // Not verified in time, or the request went away meanwhile (a legacy session's end): nothing accepted.
  if (!verified || era.closing?.aborted) return { kind: 'pending', navigationId, wait: { reason: 'user', navigation } };
  era.verified?.(navigationId);
  // Accepted meanwhile by another call of the same operation: acceptance finds its receipt.
  return acceptFlow(deps, ctx, call, era, (await findNavigationById(broker.pool, navigationId))!);
}

/**
 * Accepts a verified flow's operation (once, on the flow's own lineage) and performs it; a high-risk
 * operation first waits (bounded) for an operator's approval.
 */
export async function acceptFlow(
  deps: CallDriverDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  era: CallEra,
  navigation: NavigationRecord,
): Promise<CallStep> {
  const gate = await awaitApproval(
    deps.broker,
    { navigationId: navigation.id, tool: call.tool, provider: call.provider },
    deps.broker.retryWaitMs,
  );
  if (gate.kind === 'rejected')
    return done(errorResult(approvalMessage(gate, call.purpose), { status: 'rejected', approvalId: gate.approval.id }));
  if (gate.kind === 'pending')
    return {
      kind: 'pending',
      navigationId: navigation.id,
      wait: { reason: 'approval', approvalId: gate.approval.id, message: approvalMessage(gate, call.purpose) },
    };
  const { lineage } = navigation;
  // A reconnect flow renews a connection and carries no operation (broker/startReconnect.ts).
  if (lineage === RECONNECT)
    throw new ConflictError('This connection flow renews a connection; it accepts no operation.');
  const { receipt } = await acceptOriginalOperation(
    deps.broker,
    {
      navigationId: navigation.id,
      principal: ctx.principal,
      clientId: ctx.clientId,
      tool: call.tool,
      requestDigest: call.requestDigest,
      lineage,
      arguments: call.arguments,
      // What each lineage records of the request that accepted: nested, its JSON-RPC id; -32042, which retry.
      ...(lineage === 'nested' && era.jsonrpcId !== undefined && { jsonrpcId: era.jsonrpcId }),
      ...(lineage === 'error_retry' && { retryGeneration: navigation.retryGeneration + 1 }),
    },
    navigation,
  );
  return done(await runAccepted(deps, ctx, call, receipt, era.stream));
}

/**
 * Whether the call can run on a connection now (connectionAccessFor), and, in the same statement,
 * whether its operation has a flow still open (runConnected settles it instead of running beside it).
 */
function accessWithOpenFlow(deps: CallDriverDeps, ctx: ToolContext, call: ConnectionCall, era: CallEra) {
  const operation = { key: operationKey(navigationRequest(ctx, call, era.lineage)), now: deps.broker.clock.now() };
  return connectionAccessFor(deps.vault, ctx.principal, call.provider, call.scopes, call.choice, operation);
}

function fromAccess(
  deps: CallDriverDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  era: CallEra,
  access: ConnectionAccess,
): Promise<CallStep> | CallStep {
  if (access.kind === 'unknown_account')
    return done(unknownAccountResult(providerNameOf(deps.broker, call.provider), access));
  if (access.kind === 'choose') return askWhichAccount(deps, ctx, call, access.candidates);
  if (access.kind === 'connected') return runConnected(deps, ctx, call, era, access);
  return askToConnect(deps, ctx, call, era, access);
}

/** The call on a usable connection: at once, or, beside an open flow or for approval, through a receipt. */
async function runConnected(
  deps: CallDriverDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  era: CallEra,
  access: Extract<ConnectionAccess, { kind: 'connected' }>,
): Promise<CallStep> {
  // Never beside a flow still open for this operation (connected meanwhile through another one):
  // settle it and accept the operation through it, once, with a receipt.
  const settled =
    access.openFlowId !== undefined
      ? await settleConnectedFlow(deps.broker, access.openFlowId, ctx.principal)
      : undefined;
  if (settled?.status === State.REQUIREMENT_VERIFIED) return acceptFlow(deps, ctx, call, era, settled);
  if (!needsApproval(deps.broker, call.tool, call.provider)) {
    // No receipt yet: a refused token is forgotten and the user asked exactly as if never
    // connected, so the host's retry after connecting does the operation, once.
    const outcome = await performOrForget(deps.vault, access, (live) =>
      call.perform(live, randomUUID(), { ctx, ...(era.stream && { ask: era.stream.ask }) }),
    );
    return reconnectReasonOf(outcome)
      ? askToConnect(deps, ctx, call, era, { kind: 'not_connected', connection: access.connection })
      : done(namingConnection(call.render(outcome), access.connection));
  }
  // A high-risk operation waits for an operator even when connected: it gets a record born verified,
  // and is accepted once, with a receipt, like any other. On 2025-11-25 that record is of the -32042
  // lineage whatever the session's: an identical call joins it until it is approved and done once.
  const { navigation } = await startNavigation(deps.broker, {
    ...navigationRequest(ctx, call, era.lineage === 'mrtr' ? 'mrtr' : 'error_retry'),
    alreadyConnected: true,
  });
  return acceptFlow(deps, ctx, call, era, navigation);
}

/** Several usable connections and nothing names one: a form listing the accounts (labels only). */
async function askWhichAccount(
  deps: CallDriverDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  candidates: readonly ConnectionRecord[],
): Promise<CallStep> {
  const name = providerNameOf(deps.broker, call.provider);
  if (!elicitationModes(ctx.capabilities).form || !deps.forms) {
    const labels = candidateLabels(candidates);
    return done(
      errorResult(
        `You have several ${name} accounts connected and no default: call again with account set to one of ${labels
          .map((l) => `"${l}"`)
          .join(', ')}, or make one your default on the connections page. Nothing was done.`,
        { status: 'account_required', accounts: labels },
      ),
    );
  }
  const form = accountQuestion(name, call.purpose, candidates);
  await deps.forms.admit(form, {
    tool: call.tool,
    origin: 'broker',
    actor: `mcp:${ctx.principal.sub}`,
    requestId: ctx.requestId,
    logger: deps.broker.logger,
  });
  return { kind: 'ask', question: { kind: 'account', form, candidates } };
}

/** The connect link for the call's flow (reused while it is open), as a question for the host. */
async function askToConnect(
  deps: CallDriverDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  era: CallEra,
  access: ConnectionAccess,
): Promise<CallStep> {
  if (!elicitationModes(ctx.capabilities).url) throw era.noUrlElicitation(call);
  const request = navigationRequest(ctx, call, era.lineage);
  const { navigation, connectUrl } =
    (await findReusableNavigation(deps.broker, request)) ?? (await startNavigation(deps.broker, request));
  const name = providerNameOf(deps.broker, call.provider);
  const message = `${connectRequestText(call, name, navigation.targetHost, access)} The link opens ${deps.broker.publicUrl.host}, where you sign in and confirm before being sent to ${navigation.targetHost}.`;
  return { kind: 'ask', question: { kind: 'connect', navigation, url: connectUrl, message } };
}

// The user finished connecting (whether or not a call has accepted the operation since).
const isVerified = (status: NavigationState | undefined): boolean => status !== undefined && verifiedStates.has(status);

/** Follows operator re-issues from a flow to the newest one that replaces it. */
async function latestReissue(deps: CallDriverDeps, navigationId: string): Promise<string> {
  let id = navigationId;
  for (let hops = 0; hops < 10; hops++) {
    const next = await findReissueOf(deps.broker.pool, id);
    if (!next) return id;
    id = next.id;
  }
  return id;
}
