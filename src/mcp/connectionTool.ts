import { randomUUID } from 'node:crypto';
import {
  acceptOriginalOperation,
  InputRequiredError,
  runAcceptedOperation,
  type BusinessOutcome,
} from '../broker/acceptOriginalOperation.js';
import { advanceIfAllowed } from '../broker/advance.js';
import type { BrokerDeps } from '../broker/brokerDeps.js';
import { providerNameOf } from '../broker/brokerDeps.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { approvalMessage, awaitApproval, needsApproval } from '../broker/approvals.js';
import { findNavigationById, findReissueOf } from '../broker/navigationRepo.js';
import { declinedStates, State, type Lineage } from '../flow/navigationStates.js';
import { findReceiptByNavigation, type OperationReceipt } from '../broker/receiptRepo.js';
import { settleConnectedFlow } from '../broker/settleOpenFlows.js';
import {
  findReusableNavigation,
  operationKey,
  startNavigation,
  type NavigationRequest,
} from '../broker/startNavigation.js';
import { invalidParams, missingRequiredClientCapability } from './toMcp.js';
import {
  performOrForget,
  reconnectOutcome,
  reconnectReasonOf,
  touchDue,
  type StoredAccess,
} from '../broker/forgetConnection.js';
import { connectionAccessFor, type ConnectionAccess } from '../broker/connectionAccess.js';
import type { ConnectionChoice } from '../broker/connectionChoice.js';
import { recordReceiptConnection } from '../broker/receiptConnectionRepo.js';
import { findConnectionsFor, touchConnectionAlongside, type ConnectionRecord } from '../secrets/connectionsRepo.js';
import {
  accountAnswerOf,
  accountQuestion,
  ACCOUNT_INPUT_KEY,
  candidateLabels,
  CHOOSE_ACCOUNT_PHASE,
  namingConnection,
  unknownAccountResult,
} from './accountChoice.js';
import type { FormGuard } from './formGuard.js';
import type { TokenVaultDeps } from '../secrets/tokenVault.js';
import { completeResult, errorResult, type ToolContext } from './defineTool.js';
import { connectAnswerOf, declinedResult } from './connectAnswer.js';
import { elicitationModes, type ToolCallResult } from './protocol.js';
import { openPresentedState, type RequestStateCodec, type SealedState, type StateBinding } from './requestState.js';

export interface ConnectionToolDeps {
  broker: BrokerDeps;
  vault: TokenVaultDeps;
  requestState: RequestStateCodec;
}

/**
 * A tool call's deps: with the form guard, which admits the account question before it is sent
 * (formGuard.ts). Without one, a call that would ask is told to name the account instead.
 */
export type ConnectionCallDeps = ConnectionToolDeps & { forms?: FormGuard };

/** One call of a tool that needs a third-party connection. */
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

/** How an accepted operation's host request may be asked on its stream (2025-11-25): the question, and its bound. */
export interface HostStream {
  ask: NonNullable<DirectPerform['ask']>;
  waitMs: number;
}

const INPUT_KEY = 'connect';
const PENDING_META = 'io.connect-broker/pending';
// A held operation may wait for an operator for a while: its state lives a day.
const APPROVAL_STATE_TTL_SECONDS = 24 * 3600;

/** Follows operator re-issues from a flow to the newest one that replaces it. */
async function latestReissue(broker: BrokerDeps, navigationId: string): Promise<string> {
  let id = navigationId;
  for (let hops = 0; hops < 10; hops++) {
    const next = await findReissueOf(broker.pool, id);
    if (!next) return id;
    id = next.id;
  }
  return id;
}

/**
 * The 2026-07-28 (MRTR) lineage: run at once when connected;
 * else answer input_required with a URL elicitation; on the retry, `accept`
 * is consent only, completion is the verified callback, the operation is
 * accepted once through acceptOriginalOperation, and a pending flow gets a
 * bounded wait and then a state-only input_required.
 */
export async function runConnectionTool(
  deps: ConnectionCallDeps,
  ctx: ToolContext,
  call: ConnectionCall,
): Promise<ToolCallResult> {
  const binding: StateBinding = {
    principal: ctx.principal,
    clientId: ctx.clientId,
    method: 'tools/call',
    tool: call.tool,
    digest: call.requestDigest,
    phase: 'connect',
  };
  if (ctx.requestState === undefined) {
    const access = await accessWithOpenFlow(deps, ctx, call);
    if (access.kind === 'unknown_account')
      return unknownAccountResult(providerNameOf(deps.broker, call.provider), access);
    if (access.kind === 'choose') return askWhichAccount(deps, ctx, call, binding, access.candidates);
    if (access.kind !== 'connected') return askToConnect(deps, ctx, call, binding, access);
    return runConnected(deps, ctx, call, binding, access);
  }
  if (ctx.inputResponses?.[ACCOUNT_INPUT_KEY] !== undefined) return answerWhichAccount(deps, ctx, call, binding);
  const state = await openPresentedState(deps.requestState, ctx.requestState, binding);
  const navigation = state.navigationId ? await findNavigationById(deps.broker.pool, state.navigationId) : undefined;
  if (!navigation) throw invalidParams('requestState refers to no connection flow; call the tool again without it');
  // The state is sealed for this client already; the flow must be its too (a re-issue keeps the client).
  if (!sameClient(navigation, ctx))
    throw invalidParams('requestState belongs to another client of this user; call the tool again without it');

  const raw = ctx.inputResponses?.[INPUT_KEY];
  if (raw === undefined) return settle(deps, ctx, call, binding, state, navigation);
  const answer = await connectAnswerOf(deps.broker, navigation, raw, {
    actor: `mcp:${ctx.principal.sub}`,
    purpose: call.purpose,
    retry: 'retry with the same requestState and accept to continue.',
  });
  if (answer.kind === 'ended') return answer.result;
  return settle(deps, ctx, call, binding, state, answer.navigation);
}

/**
 * Whether the call can run on a connection now (connectionAccessFor), and, in the same statement,
 * whether its operation has a flow still open (runConnected settles it instead of running beside it).
 */
function accessWithOpenFlow(deps: ConnectionToolDeps, ctx: ToolContext, call: ConnectionCall) {
  const operation = { key: operationKey(navigationRequest(ctx, call, 'mrtr')), now: deps.broker.clock.now() };
  return connectionAccessFor(deps.vault, ctx.principal, call.provider, call.scopes, call.choice, operation);
}

/** The call on a usable connection (read by accessWithOpenFlow): at once, or, beside an open flow or for approval, through a receipt. */
async function runConnected(
  deps: ConnectionToolDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  binding: StateBinding,
  access: Extract<ConnectionAccess, { kind: 'connected' }>,
): Promise<ToolCallResult> {
  // Never beside a flow still open for this operation (connected meanwhile through another one):
  // settle it and accept the operation through it, once, with a receipt.
  const settled =
    access.openFlowId !== undefined
      ? await settleConnectedFlow(deps.broker, access.openFlowId, ctx.principal)
      : undefined;
  if (settled?.status === State.REQUIREMENT_VERIFIED)
    return accept(deps, ctx, call, settled, binding, { navigationId: settled.id, generation: 0 });
  if (!needsApproval(deps.broker, call.tool, call.provider)) {
    // No receipt yet: a refused token is forgotten and the user asked exactly as if never
    // connected, so the host's retry after connecting does the operation, once.
    const outcome = await performOrForget(deps.vault, access, (live) => call.perform(live, randomUUID(), { ctx }));
    return reconnectReasonOf(outcome)
      ? askToConnect(deps, ctx, call, binding, { kind: 'not_connected', connection: access.connection })
      : namingConnection(call.render(outcome), access.connection);
  }
  // A high-risk operation waits for an operator even when connected: it gets a record born
  // verified, and is accepted once, with a receipt, like any other.
  const { navigation } = await startNavigation(deps.broker, {
    ...navigationRequest(ctx, call, 'mrtr'),
    alreadyConnected: true,
  });
  return accept(deps, ctx, call, navigation, binding, { navigationId: navigation.id, generation: 0 });
}

/**
 * Several usable connections and nothing names one: input_required with a form listing the accounts
 * (labels only), the candidates sealed in the requestState (MCP 2026-07-28, MRTR).
 */
async function askWhichAccount(
  deps: ConnectionCallDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  binding: StateBinding,
  candidates: readonly ConnectionRecord[],
): Promise<ToolCallResult> {
  if (!elicitationModes(ctx.capabilities).form || !deps.forms)
    return errorResult(
      `You have several ${providerNameOf(deps.broker, call.provider)} accounts connected and no default: call again with account set to one of ${candidateLabels(
        candidates,
      )
        .map((l) => `"${l}"`)
        .join(', ')}, or make one your default on the connections page. Nothing was done.`,
      { status: 'account_required', accounts: candidateLabels(candidates) },
    );
  const form = accountQuestion(providerNameOf(deps.broker, call.provider), call.purpose, candidates);
  await deps.forms.admit(form, {
    tool: call.tool,
    origin: 'broker',
    actor: `mcp:${ctx.principal.sub}`,
    requestId: ctx.requestId,
    logger: deps.broker.logger,
  });
  const { token } = await deps.requestState.seal(
    { ...binding, phase: CHOOSE_ACCOUNT_PHASE },
    { candidates: candidates.map((c) => c.id) },
  );
  return { resultType: 'input_required', inputRequests: { [ACCOUNT_INPUT_KEY]: form }, requestState: token };
}

/** The retry that answers askWhichAccount: the chosen connection is used for this call only. */
async function answerWhichAccount(
  deps: ConnectionCallDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  binding: StateBinding,
): Promise<ToolCallResult> {
  const state = await openPresentedState(deps.requestState, ctx.requestState!, {
    ...binding,
    phase: CHOOSE_ACCOUNT_PHASE,
  });
  const all = await findConnectionsFor(deps.broker.pool, ctx.principal, call.provider);
  const offered = state.candidates.map((id) => all.find((c) => c.id === id)).filter((c) => c !== undefined);
  if (offered.length !== state.candidates.length)
    throw invalidParams('An account offered is no longer connected; call the tool again without requestState');
  const answer = accountAnswerOf(ctx.inputResponses![ACCOUNT_INPUT_KEY], offered);
  if (answer.kind !== 'chosen')
    return completeResult(`No account was chosen; ${call.purpose} was not done.`, {
      status: answer.kind === 'declined' ? 'declined' : 'cancelled',
    });
  const chosen = { ...call, choice: { ...call.choice, connectionId: answer.connectionId } };
  const access = await accessWithOpenFlow(deps, ctx, chosen);
  if (access.kind === 'connected' && access.connection.id === answer.connectionId)
    return runConnected(deps, ctx, chosen, binding, access);
  // Changed meanwhile (refused, disconnected): asked again from what is usable now.
  if (access.kind === 'choose') return askWhichAccount(deps, ctx, call, binding, access.candidates);
  if (access.kind === 'connected') return runConnected(deps, ctx, chosen, binding, access);
  if (access.kind === 'unknown_account')
    return unknownAccountResult(providerNameOf(deps.broker, call.provider), access);
  return askToConnect(deps, ctx, call, binding, access);
}

// A flow's retry asks nobody which account: whether the user is connected is the default's (or the named one's) answer.
const settling = (call: ConnectionCall): ConnectionChoice => ({ ...call.choice, ask: false });

/**
 * The retry of a flow: its outcome once accepted, or its acceptance once verified, or a bounded wait.
 * `seen`, the flow as this request read it: reading it before its receipt is safe, as a flow that
 * moves on only moves towards its receipt. Seen verified, it needs no receipt read: the acceptance
 * finds any receipt under the flow's lock (acceptOriginalOperation).
 */
async function settle(
  deps: ConnectionToolDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  binding: StateBinding,
  state: SealedState,
  seen?: NavigationRecord,
): Promise<ToolCallResult> {
  const { broker } = deps;
  const navigationId = state.navigationId!;
  const read = seen?.id === navigationId ? seen : await findNavigationById(broker.pool, navigationId);
  if (read?.status !== State.REQUIREMENT_VERIFIED) {
    const receipt = await findReceiptByNavigation(broker.pool, navigationId);
    if (receipt) return runAccepted(deps, ctx, call, receipt);
  }
  const navigation = read!;
  if (declinedStates.has(navigation.status)) return declinedResult(call.purpose);
  if (navigation.status === State.REQUIREMENT_VERIFIED || navigation.status === State.OPERATION_REJECTED)
    return accept(deps, ctx, call, navigation, binding, state);
  if (navigation.status === State.EXPIRED) {
    // An operator may have re-issued the link of an expired or stuck flow: the retry follows it.
    const successor = await latestReissue(broker, navigationId);
    if (successor !== navigationId) return settle(deps, ctx, call, binding, { ...state, navigationId: successor });
  }
  if (navigation.status === State.EXPIRED || navigation.expiresAt <= broker.clock.now()) {
    await advanceIfAllowed(deps.broker, navigation.id, 'expire', `mcp:${ctx.principal.sub}`);
    return askToConnect(
      deps,
      ctx,
      call,
      binding,
      await connectionAccessFor(deps.vault, ctx.principal, call.provider, call.scopes, settling(call)),
    );
  }
  // Connected meanwhile through another flow (the settling in the callback missed one started
  // just after it): the requirement is met; settle this one rather than wait for a second callback.
  if (
    (await connectionAccessFor(deps.vault, ctx.principal, call.provider, call.scopes, settling(call))).kind ===
    'connected'
  ) {
    const settled = await settleConnectedFlow(broker, navigationId, ctx.principal);
    if (settled?.status === State.REQUIREMENT_VERIFIED) return accept(deps, ctx, call, settled, binding, state);
  }
  const verified = await broker.waits.run(ctx.principal, () =>
    broker.signal.waitFor(
      navigationId,
      broker.retryWaitMs,
      async () => (await findNavigationById(broker.pool, navigationId))?.status === State.REQUIREMENT_VERIFIED,
    ),
  );
  if (verified) return accept(deps, ctx, call, (await findNavigationById(broker.pool, navigationId))!, binding, state);
  // Still waiting for the user: state only, no new prompt (MCP 2026-07-28, MRTR; the host may retry).
  const { token } = await deps.requestState.seal(binding, {
    navigationId,
    generation: state.generation + 1,
    ttlSeconds: ttlOf(broker, navigation),
  });
  return { resultType: 'input_required', requestState: token };
}

async function accept(
  deps: ConnectionToolDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  navigation: NavigationRecord,
  binding: StateBinding,
  state: Pick<SealedState, 'navigationId' | 'generation'>,
): Promise<ToolCallResult> {
  const gate = await awaitApproval(
    deps.broker,
    { navigationId: navigation.id, tool: call.tool, provider: call.provider },
    deps.broker.retryWaitMs,
  );
  if (gate.kind === 'rejected') {
    return errorResult(approvalMessage(gate, call.purpose), { status: 'rejected', approvalId: gate.approval.id });
  }
  if (gate.kind === 'pending') {
    // Still waiting: state only, so the host retries (MCP 2026-07-28, MRTR); _meta says why, for people and logs.
    const { token } = await deps.requestState.seal(binding, {
      navigationId: state.navigationId!,
      generation: state.generation + 1,
      ttlSeconds: APPROVAL_STATE_TTL_SECONDS,
    });
    return {
      resultType: 'input_required',
      requestState: token,
      _meta: {
        [PENDING_META]: {
          reason: 'operator_approval',
          approvalId: gate.approval.id,
          message: approvalMessage(gate, call.purpose),
        },
      },
    };
  }
  const { receipt } = await acceptOriginalOperation(
    deps.broker,
    {
      navigationId: navigation.id,
      principal: ctx.principal,
      tool: call.tool,
      requestDigest: call.requestDigest,
      lineage: 'mrtr',
      arguments: call.arguments,
      clientId: ctx.clientId,
    },
    navigation,
  );
  return runAccepted(deps, ctx, call, receipt);
}

/**
 * Performs an accepted operation through its receipt (once, whichever lineage).
 * A 401 from the provider, or no connection left by then, means the provider
 * did nothing: that is recorded as the receipt's final outcome, and the host is
 * told to call again after reconnecting, which is a new operation. So this
 * receipt must never stay pending: the reconcile sweep, or a retry, would
 * otherwise perform it with the new token after the user already did it again.
 */
export async function runAccepted(
  deps: ConnectionToolDeps,
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

async function askToConnect(
  deps: ConnectionToolDeps,
  ctx: ToolContext,
  call: ConnectionCall,
  binding: StateBinding,
  access: ConnectionAccess,
): Promise<ToolCallResult> {
  if (!elicitationModes(ctx.capabilities).url) {
    throw missingRequiredClientCapability(
      `${call.tool} needs a connection to ${call.provider}, which needs URL elicitation ({"elicitation":{"url":{}}}) on this request`,
      { elicitation: { url: {} } },
    );
  }
  const request = navigationRequest(ctx, call, 'mrtr');
  const { navigation, connectUrl } =
    (await findReusableNavigation(deps.broker, request)) ?? (await startNavigation(deps.broker, request));
  const name = providerNameOf(deps.broker, call.provider);
  const message = `${connectRequestText(call, name, navigation.targetHost, access)} The link opens ${deps.broker.publicUrl.host}, where you sign in and confirm before being sent to ${navigation.targetHost}.`;
  const { token } = await deps.requestState.seal(binding, {
    navigationId: navigation.id,
    generation: 0,
    ttlSeconds: ttlOf(deps.broker, navigation),
  });
  return {
    resultType: 'input_required',
    inputRequests: { [INPUT_KEY]: { method: 'elicitation/create', params: { mode: 'url', message, url: connectUrl } } },
    requestState: token,
  };
}

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

// The state outlives its navigation by an hour, so a late retry still learns the flow expired and
// gets a new link; the navigation, not the state, decides what may be accepted.
function ttlOf(broker: BrokerDeps, navigation: NavigationRecord): number {
  return Math.max(60, Math.ceil((navigation.expiresAt.getTime() - broker.clock.now().getTime()) / 1000) + 3600);
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
