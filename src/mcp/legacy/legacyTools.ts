import { randomBytes } from 'node:crypto';
import { acceptOriginalOperation } from '../../broker/acceptOriginalOperation.js';
import { approvalMessage, awaitApproval, needsApproval } from '../../broker/approvals.js';
import type { NavigationRecord } from '../../flow/navigationRecord.js';
import type { Pool } from '../../db/pool.js';
import { findNavigationById } from '../../broker/navigationRepo.js';
import { openStates, verifiedStates } from '../../flow/navigationStates.js';
import { findReceiptByNavigation } from '../../broker/receiptRepo.js';
import { settleConnectedFlow } from '../../broker/settleOpenFlows.js';
import { findReusableNavigation, startNavigation } from '../../broker/startNavigation.js';
import { InvalidInputError } from '../../errors/appError.js';
import { invalidParams, McpProtocolError, outageOf, toToolError, urlElicitationRequired } from '../toMcp.js';
import { performOrForget, reconnectReasonOf } from '../../broker/forgetConnection.js';
import { connectionAccessFor } from '../../broker/connectionAccess.js';
import type { Logger } from '../../shared/logger.js';
import { connectRequestText, navigationRequest, runAccepted, type ConnectionCall } from '../connectionTool.js';
import { isConnectionTool } from '../defineConnectionTool.js';
import { isFormTool, type FormTool } from '../defineFormTool.js';
import { completeResult, errorResult, type ToolContext } from '../defineTool.js';
import {
  accountAnswerOf,
  accountQuestion,
  candidateLabels,
  namingConnection,
  unknownAccountResult,
} from '../accountChoice.js';
import type { ConnectionRecord } from '../../secrets/connectionsRepo.js';
import { connectAnswerOf } from '../connectAnswer.js';
import { ElicitResultSchema } from '../elicitationForms.js';
import { elicitationModes, type CallToolResult, type ToolCallResult } from '../protocol.js';
import type { McpToolDeps } from '../toolDeps.js';
import type { ToolRegistry } from '../toolRegistry.js';
import type { RequestChannel } from './requestChannel.js';
import type { LegacySession } from './legacySessions.js';
import { findSameOperation } from './errorRetryLineage.js';
import { reachFaultPoint } from '../../shared/faultPoints.js';
import { markRequest } from '../../telemetry/spans.js';
import { providerNameOf } from '../../broker/brokerDeps.js';

export interface LegacyToolDeps {
  tools: ToolRegistry<McpToolDeps>;
  toolDeps: McpToolDeps;
  logger: Logger;
  /** LEGACY_URL_ELICITATION: which lineage a legacy call that needs a connection starts. */
  urlElicitation: 'nested' | 'error';
  /** How long a nested call waits for the user (the elicitation answer, then the verified callback). */
  waitMs: number;
  /** How long after verification an identical -32042 retry is the same operation. */
  retryWindowMs: number;
}

/** 2025-11-25 results carry no resultType. */
function legacyResult(result: ToolCallResult): Record<string, unknown> {
  const { resultType: _resultType, ...rest } = result as CallToolResult;
  return rest;
}

/**
 * tools/call on a legacy session. The same use cases as the modern path;
 * only the way the user is asked differs: a request on this call's SSE
 * stream (nested), or the -32042 error and an optional retry.
 */
export async function legacyToolCall(
  deps: LegacyToolDeps,
  session: LegacySession,
  jsonrpcId: string | number,
  params: Record<string, unknown>,
  ctx: ToolContext,
  channel: RequestChannel,
): Promise<Record<string, unknown>> {
  const name = params['name'];
  if (typeof name !== 'string') throw invalidParams('params.name must be a string');
  try {
    const tool = deps.tools.find(name);
    if (!tool) throw invalidParams(`Unknown tool: ${name.slice(0, 64)}`);
    markRequest({ 'gen_ai.tool.name': tool.name });
    if (isFormTool(tool)) return legacyResult(await askOnStream(deps, tool, params['arguments'], ctx, channel));
    if (isConnectionTool(tool))
      return legacyResult(
        await connectionCall(
          deps,
          tool.connectionCall(params['arguments'], deps.toolDeps),
          ctx,
          session,
          jsonrpcId,
          channel,
        ),
      );
    return legacyResult(await tool.call(params['arguments'], ctx, deps.toolDeps));
  } catch (err) {
    if (err instanceof McpProtocolError) throw err;
    // In the call's response, as any error of a session's call (legacyEndpoint.ts).
    const outage = outageOf(err);
    if (outage) throw outage;
    const { text, structured, log } = toToolError(err);
    if (log) deps.logger.error({ err, requestId: ctx.requestId, tool: name }, 'legacy tool failed');
    return legacyResult(errorResult(text, structured));
  }
}

/** A form tool on the legacy wire: the same question, re-checks and single-use claim, asked on this call's stream. */
async function askOnStream(
  deps: LegacyToolDeps,
  tool: FormTool,
  rawArgs: unknown,
  ctx: ToolContext,
  channel: RequestChannel,
): Promise<ToolCallResult> {
  const input = tool.form.parse(rawArgs);
  if (!elicitationModes(ctx.capabilities).form)
    throw new InvalidInputError(
      `${tool.name} asks the user in a form: this client did not declare form elicitation at initialize.`,
    );
  const { form, offered } = await tool.form.ask(input, ctx, deps.toolDeps);
  const answer = await channel.ask('elicitation/create', form.params, deps.waitMs);
  const reply = ElicitResultSchema.safeParse(answer?.['result']);
  const claim = {
    principal: ctx.principal,
    nonce: randomBytes(16).toString('base64url'),
    expiresAt: new Date(Date.now() + deps.waitMs),
    offered,
    answerableLater: false,
  };
  return tool.form.answer(input, reply.success ? reply.data : undefined, claim, deps.toolDeps);
}

async function connectionCall(
  deps: LegacyToolDeps,
  call: ConnectionCall,
  ctx: ToolContext,
  session: LegacySession,
  jsonrpcId: string | number,
  channel: RequestChannel,
): Promise<ToolCallResult> {
  const connection = deps.toolDeps.connection;
  const { broker } = connection;
  const found = await findSameOperation(broker, ctx, call, deps.retryWindowMs);
  // An operation the provider refused (its token is forgotten) was never done and is over: an
  // identical call is a new operation, which asks to connect again, rather than reading that outcome.
  const receipt = found && (await findReceiptByNavigation(broker.pool, found.id));
  const refused = receipt && reconnectReasonOf({ status: receipt.outcomeStatus, outcome: receipt.outcome });
  const same = refused ? undefined : found;
  const joined = same ? await joinSameOperation(deps, call, ctx, same, jsonrpcId, session.closing, channel) : undefined;
  if (joined) return joined;
  let access = await connectionAccessFor(connection.vault, ctx.principal, call.provider, call.scopes, call.choice);
  const providerName = providerNameOf(broker, call.provider);
  if (access.kind === 'unknown_account') return unknownAccountResult(providerName, access);
  if (access.kind === 'choose') {
    const asked = await askWhichAccountOnStream(deps, call, ctx, channel, providerName, access.candidates);
    if (asked.kind === 'result') return asked.result;
    call = { ...call, choice: { ...call.choice, connectionId: asked.connectionId } };
    access = await connectionAccessFor(connection.vault, ctx.principal, call.provider, call.scopes, call.choice);
    // Changed meanwhile (refused, disconnected): the user is asked to connect, or on the next call again.
    if (access.kind === 'choose' || access.kind === 'unknown_account') access = { kind: 'not_connected' };
  }
  if (access.kind === 'connected') {
    // Never beside a flow still open for this operation: the user is connected (through another
    // flow), so that flow's requirement is met; settle it and accept the operation through it, once.
    if (same && openStates.has(same.status)) {
      const settled = await settleConnectedFlow(broker, same.id, ctx.principal);
      const through =
        settled && (await joinSameOperation(deps, call, ctx, settled, jsonrpcId, session.closing, channel));
      if (through) return through;
    }
    if (needsApproval(broker, call.tool, call.provider)) {
      // A high-risk operation waits for an operator even when connected: a record born verified, which
      // an identical call joins (the -32042 lineage's retry) until it is approved and done once.
      const { navigation } = await startNavigation(broker, {
        ...navigationRequest(ctx, call, 'error_retry'),
        alreadyConnected: true,
      });
      return acceptAndRun(deps, call, ctx, channel, navigation.id, 'error_retry', {
        retryGeneration: navigation.retryGeneration + 1,
      });
    }
    // A refused token is forgotten and the user is asked below, exactly as if never connected.
    const outcome = await performOrForget(connection.vault, access, (live) =>
      call.perform(live, randomBytes(16).toString('hex'), {
        ctx,
        ask: (method, params) => channel.ask(method, params, deps.waitMs),
      }),
    );
    if (!reconnectReasonOf(outcome)) return namingConnection(call.render(outcome), access.connection);
    access = { kind: 'not_connected', connection: access.connection };
  }
  if (!elicitationModes(ctx.capabilities).url) {
    throw new InvalidInputError(
      `${call.tool} needs a connection to ${call.provider}, and this client did not declare URL elicitation at initialize.`,
    );
  }
  const lineage = deps.urlElicitation === 'nested' ? 'nested' : 'error_retry';
  const request = navigationRequest(ctx, call, lineage);
  const { navigation, connectUrl } =
    (await findReusableNavigation(broker, request)) ?? (await startNavigation(broker, request));
  const name = providerNameOf(broker, call.provider);
  const elicitation = {
    mode: 'url' as const,
    elicitationId: navigation.id,
    url: connectUrl,
    message: `${connectRequestText(call, name, navigation.targetHost, access)} The link opens ${broker.publicUrl.host}, where you sign in and confirm.`,
  };
  if (lineage === 'error_retry') {
    throw urlElicitationRequired({ elicitations: [elicitation] });
  }
  const answer = await channel.ask('elicitation/create', elicitation, deps.waitMs);
  const answered = await connectAnswerOf(broker, navigation, answer?.['result'], {
    actor: `mcp:${ctx.principal.sub}`,
    purpose: call.purpose,
    retry: 'finish connecting with the link, then call the tool again to continue.',
  });
  if (answered.kind === 'ended') return answered.result;
  reachFaultPoint('legacy.nested_waiting');
  // The session's end (the client's DELETE, the idle sweep, the broker stopping) ends the wait too.
  const verified = await broker.waits.run(ctx.principal, () =>
    broker.signal.waitFor(
      navigation.id,
      deps.waitMs,
      async () => isVerifiedNow(broker, navigation.id),
      session.closing,
    ),
  );
  if (session.ended) {
    return errorResult(`The session ended; ${call.purpose} was not done.`);
  }
  if (!verified) {
    return errorResult(
      `The connection was not completed in time; ${call.purpose} was not done. Finish connecting with the link (valid until ${navigation.expiresAt.toISOString()}), then call the tool again.`,
    );
  }
  // Completion was proven by the verified callback; tell this session, once, then answer the original request.
  if (!session.notified.has(navigation.id)) {
    session.notified.add(navigation.id);
    channel.notify('notifications/elicitation/complete', { elicitationId: navigation.id });
  }
  return acceptAndRun(deps, call, ctx, channel, navigation.id, 'nested', { jsonrpcId: String(jsonrpcId) });
}

/**
 * An identical call while its operation's navigation is open or just settled is that operation: the
 * -32042 retry is accepted (once), or, while that flow is unfinished, undefined (the caller answers
 * -32042 again). A nested duplicate waits (bounded) for the original call to record its outcome and
 * answers it; if the original gave up and the callback is verified, it accepts the operation itself.
 * Acceptance is unique, so nothing is done twice.
 */
/**
 * Several usable connections and nothing names one, on the legacy wire: the account question is a
 * form elicitation nested in this call (its stream), admitted by the form guard first; the answer
 * applies to this call only.
 */
async function askWhichAccountOnStream(
  deps: LegacyToolDeps,
  call: ConnectionCall,
  ctx: ToolContext,
  channel: RequestChannel,
  providerName: string,
  candidates: readonly ConnectionRecord[],
): Promise<{ kind: 'chosen'; connectionId: string } | { kind: 'result'; result: ToolCallResult }> {
  const labels = candidateLabels(candidates);
  if (!elicitationModes(ctx.capabilities).form)
    return {
      kind: 'result',
      result: errorResult(
        `You have several ${providerName} accounts connected and no default: call again with account set to one of ${labels.map((l) => `"${l}"`).join(', ')}, or make one your default on the connections page. Nothing was done.`,
        { status: 'account_required', accounts: labels },
      ),
    };
  const form = accountQuestion(providerName, call.purpose, candidates);
  await deps.toolDeps.forms.admit(form, {
    tool: call.tool,
    origin: 'broker',
    actor: `mcp:${ctx.principal.sub}`,
    requestId: ctx.requestId,
    logger: deps.logger,
  });
  const answer = await channel.ask('elicitation/create', form.params, deps.waitMs);
  const chosen = accountAnswerOf(answer?.['result'], candidates);
  if (chosen.kind === 'chosen') return chosen;
  return {
    kind: 'result',
    result: completeResult(`No account was chosen; ${call.purpose} was not done.`, {
      status: chosen.kind === 'declined' ? 'declined' : 'cancelled',
    }),
  };
}

async function joinSameOperation(
  deps: LegacyToolDeps,
  call: ConnectionCall,
  ctx: ToolContext,
  navigation: NavigationRecord,
  jsonrpcId: string | number,
  closing: AbortSignal,
  channel: RequestChannel,
): Promise<ToolCallResult | undefined> {
  const { broker } = deps.toolDeps.connection;
  const isVerified = async () => isVerifiedNow(broker, navigation.id);
  if (navigation.lineage === 'error_retry') {
    // The retry of a -32042: accepted once the callback is verified (a short wait if it is about to be).
    const ready =
      !openStates.has(navigation.status) ||
      (await broker.waits.run(ctx.principal, () =>
        broker.signal.waitFor(navigation.id, broker.retryWaitMs, isVerified),
      ));
    if (!ready) return undefined;
    return acceptAndRun(deps, call, ctx, channel, navigation.id, 'error_retry', {
      retryGeneration: navigation.retryGeneration + 1,
    });
  }
  // Give the original call (keyed by its JSON-RPC id) the chance to finish; take over only if it gave up.
  const recorded = async () => {
    const receipt = await findReceiptByNavigation(broker.pool, navigation.id);
    return receipt !== undefined && receipt.outcomeStatus !== 'pending';
  };
  await waitForOriginal(broker, navigation.id, deps.waitMs, ctx, recorded, closing);
  if (!(await recorded()) && !(await isVerified())) {
    return errorResult(
      `This operation is waiting for you to finish connecting (${call.purpose}); it will be done once. Call again after connecting.`,
    );
  }
  return acceptAndRun(deps, call, ctx, channel, navigation.id, 'nested', { jsonrpcId: String(jsonrpcId) });
}

/** Accepts the operation (once) and performs it; the provider's questions are asked on this call's stream. */
async function acceptAndRun(
  deps: LegacyToolDeps,
  call: ConnectionCall,
  ctx: ToolContext,
  channel: RequestChannel,
  navigationId: string,
  lineage: 'nested' | 'error_retry',
  extra: { jsonrpcId?: string; retryGeneration?: number },
): Promise<ToolCallResult> {
  const { broker } = deps.toolDeps.connection;
  // A high-risk operation waits for an operator's approval; the host is told, and calls again.
  const gate = await awaitApproval(
    broker,
    { navigationId, tool: call.tool, provider: call.provider },
    Math.min(deps.waitMs, broker.retryWaitMs),
  );
  if (gate.kind !== 'go') return errorResult(approvalMessage(gate, call.purpose));
  const { receipt } = await acceptOriginalOperation(broker, {
    navigationId,
    principal: ctx.principal,
    clientId: ctx.clientId,
    tool: call.tool,
    requestDigest: call.requestDigest,
    lineage,
    arguments: call.arguments,
    ...extra,
  });
  return runAccepted(deps.toolDeps.connection, ctx, call, receipt, {
    ask: (method, params) => channel.ask(method, params, deps.waitMs),
    waitMs: deps.waitMs,
  });
}

// Verified, or already accepted by another call for the same operation (which then holds the receipt).
/**
 * A live original call accepts within moments of its flow's verification (it waits on the completion
 * signal); a flow verified longer ago than this with no outcome recorded lost its caller (a crash, a
 * restart, a client that went away), so an identical call takes the operation over at once rather
 * than waiting out LEGACY_WAIT_MS. Acceptance and the perform lease keep it done once either way.
 */
const ORIGINAL_CALLER_GRACE_MS = 3_000;

/** Waits (bounded by `waitMs`) until the original call recorded its outcome, or was shown to be gone. */
async function waitForOriginal(
  broker: LegacyToolDeps['toolDeps']['connection']['broker'],
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
    const verifiedFor =
      current && verifiedStates.has(current.status)
        ? broker.clock.now().getTime() - current.updatedAt.getTime()
        : undefined;
    if (verifiedFor !== undefined && verifiedFor >= ORIGINAL_CALLER_GRACE_MS) return;
    const remaining = deadline - Date.now();
    if (remaining <= 0 || closing.aborted) return;
    // Unverified: until the user finishes (the signal) or the bound; verified: until the grace is over.
    const bound = verifiedFor === undefined ? remaining : Math.min(remaining, ORIGINAL_CALLER_GRACE_MS - verifiedFor);
    const settled = async () =>
      (await recorded()) || (verifiedFor === undefined && (await isVerifiedNow(broker, navigationId)));
    await broker.waits.run(ctx.principal, () => broker.signal.waitFor(navigationId, bound, settled, closing));
  }
}

async function isVerifiedNow(broker: { pool: Pool }, navigationId: string): Promise<boolean> {
  const status = (await findNavigationById(broker.pool, navigationId))?.status;
  return status !== undefined && verifiedStates.has(status);
}
