import { findNavigationById } from '../../broker/navigationRepo.js';
import { reconnectReasonOf } from '../../broker/forgetConnection.js';
import { findReceiptByNavigation } from '../../broker/receiptRepo.js';
import { InvalidInputError } from '../../errors/appError.js';
import type { NavigationRecord } from '../../flow/navigationRecord.js';
import { verifiedStates } from '../../flow/navigationStates.js';
import { reachFaultPoint } from '../../shared/faultPoints.js';
import { acceptFlow, answerConnect, chooseAccount, settle, startCall } from '../calls/callDriver.js';
import type { CallDriverDeps, CallEra, CallStep, ConnectionCall } from '../calls/connectionCall.js';
import { errorResult, type ToolContext } from '../defineTool.js';
import type { ToolCallResult } from '../protocol.js';
import { urlElicitationRequired } from '../toMcp.js';
import { findSameOperation } from './errorRetryLineage.js';
import type { LegacySession } from './legacySessions.js';
import type { McpToolDeps } from '../toolDeps.js';
import type { RequestChannel } from './requestChannel.js';

/** What the 2025-11-25 call needs besides the driver's deps (legacyTools.ts passes its own). */
export interface LegacyCallDeps {
  toolDeps: McpToolDeps;
  /** LEGACY_URL_ELICITATION: which lineage a legacy call that needs a connection starts. */
  urlElicitation: 'nested' | 'error';
  /** How long a nested call waits for the user (the elicitation answer, then the verified callback). */
  waitMs: number;
  /** How long after verification an identical -32042 retry is the same operation. */
  retryWindowMs: number;
}

// A call asks the user at most this many times (an account, a link, a new link for one that expired).
const MAX_QUESTIONS = 4;

/**
 * The 2025-11-25 wire of the call driver (calls/callDriver.ts). The host is asked on this call's
 * stream (nested: the answer re-enters the driver, which waits for the verified callback up to
 * LEGACY_WAIT_MS), or a connect link ends the call with -32042 and the identical retry is found as
 * the same operation (errorRetryLineage.ts) and goes on from its flow.
 */
export async function legacyConnectionCall(
  deps: LegacyCallDeps,
  call: ConnectionCall,
  ctx: ToolContext,
  session: LegacySession,
  jsonrpcId: string | number,
  channel: RequestChannel,
): Promise<ToolCallResult> {
  const driver: CallDriverDeps = { ...deps.toolDeps.connection, forms: deps.toolDeps.forms };
  const era = legacyEra(deps, session, String(jsonrpcId), channel);
  let step = (await joinSameOperation(deps, driver, call, ctx, era)) ?? (await startCall(driver, ctx, call, era));
  for (let asked = 0; ; asked++) {
    if (step.kind === 'done') return step.result;
    if (step.kind === 'pending') {
      const { wait } = step;
      if (wait.reason === 'approval')
        return errorResult(wait.message, {
          status: 'pending',
          reason: 'operator_approval',
          approvalId: wait.approvalId,
        });
      if (session.ended) return errorResult(`The session ended; ${call.purpose} was not done.`);
      if (era.lineage === 'nested')
        return errorResult(
          `The connection was not completed in time; ${call.purpose} was not done. Finish connecting with the link (valid until ${wait.navigation.expiresAt.toISOString()}), then call the tool again.`,
        );
      // The -32042 retry of a flow still open: the same link again.
      step = await startCall(driver, ctx, call, era);
      continue;
    }
    if (asked >= MAX_QUESTIONS)
      return errorResult(`The user was asked ${MAX_QUESTIONS} times on this call; ${call.purpose} was not done.`);
    const { question } = step;
    if (question.kind === 'account') {
      const answer = await channel.ask('elicitation/create', question.form.params, deps.waitMs);
      step = await chooseAccount(driver, ctx, call, era, question.candidates, answer?.['result']);
      continue;
    }
    const elicitation = {
      mode: 'url' as const,
      elicitationId: question.navigation.id,
      url: question.url,
      message: question.message,
    };
    if (era.lineage === 'error_retry') throw urlElicitationRequired({ elicitations: [elicitation] });
    const answer = await channel.ask('elicitation/create', elicitation, deps.waitMs);
    step = await answerConnect(driver, ctx, call, era, question.navigation, answer?.['result']);
  }
}

function legacyEra(deps: LegacyCallDeps, session: LegacySession, jsonrpcId: string, channel: RequestChannel): CallEra {
  return {
    lineage: deps.urlElicitation === 'nested' ? 'nested' : 'error_retry',
    waitMs: deps.waitMs,
    stream: { ask: (method, params) => channel.ask(method, params, deps.waitMs), waitMs: deps.waitMs },
    closing: session.closing,
    jsonrpcId,
    retryHint: 'finish connecting with the link, then call the tool again to continue.',
    noUrlElicitation: (call) =>
      new InvalidInputError(
        `${call.tool} needs a connection to ${call.provider}, and this client did not declare URL elicitation at initialize.`,
      ),
    waiting: () => reachFaultPoint('legacy.nested_waiting'),
    // Completion was proven by the verified callback: the session is told, once, before the answer.
    verified: (navigationId) => {
      if (session.notified.has(navigationId)) return;
      session.notified.add(navigationId);
      channel.notify('notifications/elicitation/complete', { elicitationId: navigationId });
    },
  };
}

/**
 * A legacy call carries no requestState, so an identical call while its operation's flow is open or
 * just settled is that operation (errorRetryLineage.ts), and goes on from it: the -32042 retry is
 * accepted once its flow is verified (a short wait if it is about to be), and while it is unfinished
 * undefined (the driver starts again, and finds the same link). A nested duplicate waits (bounded)
 * for the original call to record its outcome and answers it; if the original gave up and the
 * callback is verified, it accepts the operation itself. Acceptance is unique, so nothing is done twice.
 */
async function joinSameOperation(
  deps: LegacyCallDeps,
  driver: CallDriverDeps,
  call: ConnectionCall,
  ctx: ToolContext,
  era: CallEra,
): Promise<CallStep | undefined> {
  const { broker } = driver;
  const found = await findSameOperation(broker, ctx, call, deps.retryWindowMs);
  if (!found) return undefined;
  // An operation the provider refused (its token is forgotten) was never done and is over: an
  // identical call is a new operation, which asks to connect again, rather than reading that outcome.
  const receipt = await findReceiptByNavigation(broker.pool, found.id);
  if (receipt && reconnectReasonOf({ status: receipt.outcomeStatus, outcome: receipt.outcome })) return undefined;
  if (found.lineage === 'error_retry') {
    // Waited for as any retry, and without the nested call's fault point and notice (it asked nothing).
    const { waiting: _waiting, verified: _verified, ...rest } = era;
    const retry: CallEra = { ...rest, waitMs: broker.retryWaitMs };
    const step = await settle(driver, ctx, call, retry, found.id, found);
    return step.kind === 'pending' && step.wait.reason === 'user' ? undefined : step;
  }
  // Give the original call (keyed by its JSON-RPC id) the chance to finish; take over only if it gave up.
  const recorded = async () => {
    const receipt = await findReceiptByNavigation(broker.pool, found.id);
    return receipt !== undefined && receipt.outcomeStatus !== 'pending';
  };
  await waitForOriginal(broker, found.id, deps.waitMs, ctx, recorded, era.closing!);
  const navigation = await findNavigationById(broker.pool, found.id);
  if (!(await recorded()) && !isVerified(navigation)) {
    return {
      kind: 'done',
      result: errorResult(
        `This operation is waiting for you to finish connecting (${call.purpose}); it will be done once. Call again after connecting.`,
      ),
    };
  }
  return acceptFlow(driver, ctx, call, era, navigation!);
}

/**
 * A live original call accepts within moments of its flow's verification (it waits on the completion
 * signal); a flow verified longer ago than this with no outcome recorded lost its caller (a crash, a
 * restart, a client that went away), so an identical call takes the operation over at once rather
 * than waiting out LEGACY_WAIT_MS. Acceptance and the perform lease keep it done once either way.
 */
const ORIGINAL_CALLER_GRACE_MS = 3_000;

/** Waits (bounded by `waitMs`) until the original call recorded its outcome, or was shown to be gone. */
async function waitForOriginal(
  broker: CallDriverDeps['broker'],
  navigationId: string,
  waitMs: number,
  ctx: ToolContext,
  recorded: () => Promise<boolean>,
  closing: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (await recorded()) return;
    const current = await findNavigationById(broker.pool, navigationId);
    const verifiedFor = isVerified(current) ? broker.clock.now().getTime() - current!.updatedAt.getTime() : undefined;
    if (verifiedFor !== undefined && verifiedFor >= ORIGINAL_CALLER_GRACE_MS) return;
    const remaining = deadline - Date.now();
    if (remaining <= 0 || closing.aborted) return;
    // Unverified: until the user finishes (the signal) or the bound; verified: until the grace is over.
    const bound = verifiedFor === undefined ? remaining : Math.min(remaining, ORIGINAL_CALLER_GRACE_MS - verifiedFor);
    const settled = async () =>
      (await recorded()) ||
      (verifiedFor === undefined && isVerified(await findNavigationById(broker.pool, navigationId)));
    await broker.waits.run(ctx.principal, () => broker.signal.waitFor(navigationId, bound, settled, closing));
  }
}

// Verified, or already accepted by another call for the same operation (which then holds the receipt).
const isVerified = (navigation: NavigationRecord | undefined): boolean =>
  navigation !== undefined && verifiedStates.has(navigation.status);
