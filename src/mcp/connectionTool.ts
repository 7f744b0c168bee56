import type { BrokerDeps } from '../broker/brokerDeps.js';
import { findNavigationById } from '../broker/navigationRepo.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { findConnectionsFor } from '../secrets/connectionsRepo.js';
import { ACCOUNT_INPUT_KEY, CHOOSE_ACCOUNT_PHASE } from './calls/accountChoice.js';
import { answerConnect, chooseAccount, settle, startCall } from './calls/callDriver.js';
import {
  sameClient,
  type CallDriverDeps,
  type CallEra,
  type CallStep,
  type ConnectionCall,
} from './calls/connectionCall.js';
import type { ToolContext } from './defineTool.js';
import type { ToolCallResult } from './protocol.js';
import { openPresentedState, type RequestStateCodec, type StateBinding } from './requestState.js';
import { invalidParams, missingRequiredClientCapability } from './toMcp.js';

export interface ConnectionToolDeps extends CallDriverDeps {
  requestState: RequestStateCodec;
}

const INPUT_KEY = 'connect';
const PENDING_META = 'io.connect-broker/pending';
// A held operation may wait for an operator for a while: its state lives a day.
const APPROVAL_STATE_TTL_SECONDS = 24 * 3600;

/**
 * The 2026-07-28 (MRTR) wire of the call driver (calls/callDriver.ts): a question becomes
 * input_required with the step sealed in the requestState, the retry opens it and goes on from there,
 * and a wait becomes a state-only input_required the host retries. `accept` is consent only; completion
 * is the verified callback.
 */
export async function runConnectionTool(
  deps: ConnectionToolDeps,
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
  const era = mrtrEra(deps.broker);
  if (ctx.requestState === undefined) return mrtrAnswer(deps, binding, await startCall(deps, ctx, call, era), 1);
  if (ctx.inputResponses?.[ACCOUNT_INPUT_KEY] !== undefined) {
    const state = await openPresentedState(deps.requestState, ctx.requestState, {
      ...binding,
      phase: CHOOSE_ACCOUNT_PHASE,
    });
    const all = await findConnectionsFor(deps.broker.pool, ctx.principal, call.provider);
    const offered = state.candidates.map((id) => all.find((c) => c.id === id)).filter((c) => c !== undefined);
    if (offered.length !== state.candidates.length)
      throw invalidParams('An account offered is no longer connected; call the tool again without requestState');
    const raw = ctx.inputResponses[ACCOUNT_INPUT_KEY];
    return mrtrAnswer(deps, binding, await chooseAccount(deps, ctx, call, era, offered, raw), 1);
  }
  const state = await openPresentedState(deps.requestState, ctx.requestState, binding);
  const navigation = state.navigationId ? await findNavigationById(deps.broker.pool, state.navigationId) : undefined;
  if (!navigation) throw invalidParams('requestState refers to no connection flow; call the tool again without it');
  // The state is sealed for this client already; the flow must be its too (a re-issue keeps the client).
  if (!sameClient(navigation, ctx))
    throw invalidParams('requestState belongs to another client of this user; call the tool again without it');
  const raw = ctx.inputResponses?.[INPUT_KEY];
  const step =
    raw === undefined
      ? await settle(deps, ctx, call, era, navigation.id, navigation)
      : await answerConnect(deps, ctx, call, era, navigation, raw);
  return mrtrAnswer(deps, binding, step, state.generation + 1);
}

function mrtrEra(broker: BrokerDeps): CallEra {
  return {
    lineage: 'mrtr',
    waitMs: broker.retryWaitMs,
    retryHint: 'retry with the same requestState and accept to continue.',
    noUrlElicitation: (call) =>
      missingRequiredClientCapability(
        `${call.tool} needs a connection to ${call.provider}, which needs URL elicitation ({"elicitation":{"url":{}}}) on this request`,
        { elicitation: { url: {} } },
      ),
  };
}

/**
 * A step as the 2026-07-28 answer: the result, or input_required with the step sealed for the retry
 * (a new link's state is generation 0; each state-only retry's, the next).
 */
async function mrtrAnswer(
  deps: ConnectionToolDeps,
  binding: StateBinding,
  step: CallStep,
  generation: number,
): Promise<ToolCallResult> {
  if (step.kind === 'done') return step.result;
  const question = step.kind === 'ask' ? step.question : undefined;
  if (question?.kind === 'account') {
    const { form, candidates } = question;
    const { token } = await deps.requestState.seal(
      { ...binding, phase: CHOOSE_ACCOUNT_PHASE },
      { candidates: candidates.map((c) => c.id) },
    );
    return { resultType: 'input_required', inputRequests: { [ACCOUNT_INPUT_KEY]: form }, requestState: token };
  }
  if (question?.kind === 'connect') {
    const { navigation, url, message } = question;
    const { token } = await deps.requestState.seal(binding, {
      navigationId: navigation.id,
      generation: 0,
      ttlSeconds: ttlOf(deps.broker, navigation),
    });
    return {
      resultType: 'input_required',
      inputRequests: { [INPUT_KEY]: { method: 'elicitation/create', params: { mode: 'url', message, url } } },
      requestState: token,
    };
  }
  if (step.kind !== 'pending') throw new Error('unreachable: every question is answered above');
  const { wait } = step;
  // Still waiting: state only, no new prompt, so the host retries; _meta says why an operator holds it.
  const { token } = await deps.requestState.seal(binding, {
    navigationId: step.navigationId,
    generation,
    ttlSeconds: wait.reason === 'user' ? ttlOf(deps.broker, wait.navigation) : APPROVAL_STATE_TTL_SECONDS,
  });
  if (wait.reason === 'user') return { resultType: 'input_required', requestState: token };
  return {
    resultType: 'input_required',
    requestState: token,
    _meta: { [PENDING_META]: { reason: 'operator_approval', approvalId: wait.approvalId, message: wait.message } },
  };
}

// The state outlives its navigation by an hour, so a late retry still learns the flow expired and
// gets a new link; the navigation, not the state, decides what may be accepted.
function ttlOf(broker: BrokerDeps, navigation: NavigationRecord): number {
  return Math.max(60, Math.ceil((navigation.expiresAt.getTime() - broker.clock.now().getTime()) / 1000) + 3600);
}
