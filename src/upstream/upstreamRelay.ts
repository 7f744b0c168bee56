import { randomUUID } from 'node:crypto';
import { operationKey, type BusinessOutcome } from '../broker/acceptOriginalOperation.js';
import { findReceiptById } from '../broker/receiptRepo.js';
import { ForbiddenError, InvalidInputError } from '../errors/appError.js';
import type { ConnectionCall, DirectPerform } from '../mcp/calls/connectionCall.js';
import type { ToolContext } from '../mcp/defineTool.js';
import { ElicitResultSchema } from '../mcp/elicitationForms.js';
import { elicitationModes, type ToolCallResult } from '../mcp/protocol.js';
import { RequestStateError, type SealedState, type StateBinding } from '../mcp/requestState.js';
import { invalidParams } from '../mcp/toMcp.js';
import type { McpToolDeps } from '../mcp/toolDeps.js';
import type { Provider } from '../providers/providerConfig.js';
import { shippedProtectedDomains, type ProtectedDomains } from '../security/protectedDomains.js';
import type { Logger } from '../shared/logger.js';
import { CANNOT_ASK, type UpstreamAskAnswer } from './upstreamCallRouting.js';
import type { UpstreamCallAnswer } from './upstreamMcpClient.js';
import { judgeInputRequests, type InputJudge, type RelayedInput } from './upstreamInput.js';

// An upstream's questions on their way to the host, judged first (upstreamInput.ts): relayed as the
// broker's own input_required (2026-07-28), asked on the call's stream (2025-11-25), or refused.

export type UpstreamInputAnswer = Extract<UpstreamCallAnswer, { kind: 'input_required' }>;

export interface RelayDeps {
  logger: Logger;
  /** The domains a relayed link's lookalikes are judged against (the shipped list and the configured providers'). */
  protectedDomains?: ProtectedDomains | undefined;
}

/** The phase a relayed upstream input_required's requestState is sealed for. */
export const UPSTREAM_INPUT_PHASE = 'upstream_input';

/** The host's retry of a relayed input_required: what goes back to the upstream. */
export interface Resume {
  inputResponses: Record<string, unknown>;
  requestState: string | undefined;
  /** The accepted operation the question was asked for: the answer resumes it, through its receipt. */
  receiptId?: string | undefined;
}

/**
 * The host's side of one relayed input_required: on 2026-07-28, the broker's own input_required with
 * the upstream's requestState sealed in the broker's; on 2025-11-25, each request asked on the
 * call's stream and the answers collected for the upstream. Judged first (upstreamInput.ts).
 */
export async function relayInput(
  relay: RelayDeps,
  toolDeps: McpToolDeps,
  direct: DirectPerform,
  call: { provider: Provider; name: string; requestDigest: string },
  answer: UpstreamInputAnswer,
): Promise<
  | { kind: 'done'; outcome: BusinessOutcome }
  | { kind: 'asked'; resume: Resume }
  | { kind: 'relayed'; result: ToolCallResult; until: Date }
> {
  const { ctx } = direct;
  let judged: RelayedInput[];
  try {
    judged = await judgeInputRequests(judgeFor(relay, toolDeps, ctx, call), answer.inputRequests, answer.requestState);
  } catch (err) {
    if (!(err instanceof ForbiddenError)) throw err;
    return { kind: 'done', outcome: { status: 'failed', outcome: { error: 'input_refused', message: err.message } } };
  }
  if (direct.ask) {
    const inputResponses: Record<string, unknown> = {};
    for (const input of judged) {
      const params = input.mode === 'url' ? { ...input.params, elicitationId: randomUUID() } : input.params;
      const reply = ElicitResultSchema.safeParse((await direct.ask('elicitation/create', params))?.['result']);
      if (!reply.success)
        return {
          kind: 'done',
          outcome: failed(
            `${call.provider.displayName}'s question for ${call.name} was not answered; nothing was done.`,
          ),
        };
      inputResponses[input.key] = reply.data;
    }
    return { kind: 'asked', resume: { inputResponses, requestState: answer.requestState } };
  }
  const { token, state } = await toolDeps.connection.requestState.seal(
    relayBinding(ctx, call.name, call.requestDigest),
    {
      ...(answer.requestState !== undefined && { upstreamState: answer.requestState }),
      inputKeys: judged.map((i) => i.key),
      ...(direct.receiptId !== undefined && { receiptId: direct.receiptId }),
    },
  );
  const relayed: ToolCallResult = {
    resultType: 'input_required',
    ...(judged.length > 0 && {
      inputRequests: Object.fromEntries(judged.map((i) => [i.key, { method: 'elicitation/create', params: i.params }])),
    }),
    requestState: token,
  } as ToolCallResult;
  if (direct.receiptId !== undefined) return { kind: 'relayed', result: relayed, until: state.expiresAt };
  return { kind: 'done', outcome: { status: 'failed', outcome: { error: 'input_required', relayed } } };
}

/** How an upstream's questions on a call of `ctx`'s are judged (upstreamInput.ts). */
function judgeFor(
  relay: RelayDeps,
  toolDeps: McpToolDeps,
  ctx: ToolContext,
  call: { provider: Provider; name: string },
): InputJudge {
  return {
    forms: toolDeps.forms,
    asker: {
      tool: call.name,
      origin: 'upstream',
      actor: `mcp:${ctx.principal.sub}`,
      requestId: ctx.requestId,
      logger: relay.logger,
    },
    modes: elicitationModes(ctx.capabilities),
    allowLoopback: toolDeps.connection.broker.allowLoopback,
    protectedDomains: relay.protectedDomains ?? shippedProtectedDomains(),
    displayName: call.provider.displayName,
  };
}

/**
 * A 2025-11-25 upstream's elicitation/create during a call (a server-to-client request on the
 * call's stream), judged as an input_required's are. Asked of a 2025-11-25 host that declared its
 * mode, nested on the call's stream, and its answer returned. Otherwise the upstream gets a JSON-RPC
 * error, never a `decline` (an answer the user did not give), and decides what to do; the host is
 * told why in the result (`notes`): CANNOT_ASK when nobody can be asked (a re-drive, with no host request, a
 * 2026-07-28 host, which has no server-to-client channel and whose retry may reach another
 * instance, a mode the host did not declare, no answer), -32602 when the question was refused (a
 * form the form audit refuses, a link the URL classifier blocks): the host never sees it.
 */
export async function askForUpstream(
  relay: RelayDeps,
  toolDeps: McpToolDeps,
  direct: DirectPerform | undefined,
  call: { provider: Provider; name: string },
  params: Record<string, unknown>,
  notes: string[],
): Promise<UpstreamAskAnswer> {
  const from = `${call.provider.displayName} asked a question during ${call.name}`;
  const cannot = (why: string): UpstreamAskAnswer => {
    notes.push(`${from} that was not shown: ${why}; it was told the broker cannot ask the user.`);
    return { kind: 'error', code: CANNOT_ASK, message: `The broker cannot ask the user on this call: ${why}.` };
  };
  if (!direct) return cannot('the call was performed without your request (a re-drive), when nobody can be asked');
  if (!direct.ask) return cannot('this client speaks MCP 2026-07-28, where a server cannot ask during a call');
  const mode = params['mode'] === 'url' ? 'url' : 'form';
  if (!elicitationModes(direct.ctx.capabilities)[mode])
    return cannot(`this client did not declare ${mode} elicitation`);
  let judged: RelayedInput[];
  try {
    judged = await judgeInputRequests(
      judgeFor(relay, toolDeps, direct.ctx, call),
      { question: { method: 'elicitation/create', params } },
      undefined,
    );
  } catch (err) {
    if (!(err instanceof ForbiddenError)) throw err;
    notes.push(err.message);
    return { kind: 'error', code: -32602, message: 'The broker refused to show this request to the user.' };
  }
  const [input] = judged;
  const shown = input!.mode === 'url' ? { ...input!.params, elicitationId: randomUUID() } : input!.params;
  const reply = ElicitResultSchema.safeParse((await direct.ask('elicitation/create', shown))?.['result']);
  if (!reply.success) return cannot('the user gave no answer');
  return { kind: 'answer', result: reply.data };
}

/** The host's retry of a relayed input_required (its requestState sealed for UPSTREAM_INPUT_PHASE), else undefined. */
export async function resumeOf(
  toolDeps: McpToolDeps,
  ctx: ToolContext,
  name: string,
  digest: string,
): Promise<Resume | undefined> {
  if (ctx.requestState === undefined) return undefined;
  let state: SealedState;
  try {
    state = await toolDeps.connection.requestState.open(ctx.requestState, relayBinding(ctx, name, digest));
  } catch (err) {
    // Another step of this call (its connect flow, an account choice): runConnectionTool's.
    if (err instanceof RequestStateError && err.otherPhase) return undefined;
    if (err instanceof RequestStateError) throw invalidParams(err.message, { cause: err });
    throw err;
  }
  const inputResponses: Record<string, unknown> = {};
  for (const key of state.inputKeys) {
    const raw = ctx.inputResponses?.[key];
    if (raw === undefined) continue;
    const reply = ElicitResultSchema.safeParse(raw);
    if (!reply.success)
      throw new InvalidInputError(`inputResponses.${key} is not an elicitation result ({action}). Nothing was done.`);
    inputResponses[key] = reply.data;
  }
  return { inputResponses, requestState: state.upstreamState, receiptId: state.receiptId };
}

/** The receipt a relayed question's state names: this caller's accepted operation of this call, else refused. */
export async function receiptFor(toolDeps: McpToolDeps, ctx: ToolContext, call: ConnectionCall, receiptId: string) {
  const receipt = await findReceiptById(toolDeps.connection.broker.pool, receiptId);
  const key =
    receipt &&
    operationKey({
      principal: ctx.principal,
      tool: call.tool,
      requestDigest: call.requestDigest,
      navigationId: receipt.navigationId,
    });
  if (!receipt || key !== receipt.operationKey)
    throw invalidParams('requestState names no operation of this call; call the tool again without it');
  return receipt;
}

export const failed = (message: string): BusinessOutcome => ({
  status: 'failed',
  outcome: { error: 'input_required', message },
});

const relayBinding = (ctx: ToolContext, tool: string, digest: string): StateBinding => ({
  principal: ctx.principal,
  clientId: ctx.clientId,
  method: 'tools/call',
  tool,
  digest,
  phase: UPSTREAM_INPUT_PHASE,
});
