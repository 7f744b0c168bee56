import type { BusinessOutcome } from '../broker/acceptOriginalOperation.js';
import { InputRequiredError } from '../broker/acceptOriginalOperation.js';
import type { ConnectionCall, DirectPerform } from '../mcp/calls/connectionCall.js';
import { errorResult } from '../mcp/defineTool.js';
import { elicitationModes, type ToolCallResult } from '../mcp/protocol.js';
import { argumentsDigest } from '../mcp/requestState.js';
import type { McpToolDeps } from '../mcp/toolDeps.js';
import type { Provider } from '../providers/providerConfig.js';
import type { Counted } from './countedRequest.js';
import type { UpstreamLists } from './upstreamLists.js';
import type { UpstreamCallAnswer, UpstreamMcp } from './upstreamMcpClient.js';
import { canonicalJson, standInName } from './upstreamNames.js';
import {
  askForUpstream,
  failed,
  relayInput,
  type RelayDeps,
  type Resume,
  type UpstreamInputAnswer,
} from './upstreamRelay.js';

export interface UpstreamCallDeps extends RelayDeps {
  mcp: UpstreamMcp;
  lists: UpstreamLists;
  counted: Counted;
}

// A 2025-11-25 host is asked on the call's stream: at most this many rounds of questions for one call.
const MAX_NESTED_ROUNDS = 5;

/**
 * One call of an upstream's tool as a connection call: performed with the user's upstream token on the
 * tool of their own list, the upstream's questions relayed to the host (upstreamRelay.ts), its answer
 * rendered as the host gets it. `resume`: the host's answers to a relayed question, sent back.
 */
export function upstreamCall(
  deps: UpstreamCallDeps,
  provider: Provider,
  name: string,
  args: Record<string, unknown>,
  toolDeps: McpToolDeps,
  resume?: Resume,
): ConnectionCall {
  const displayName = provider.displayName;
  const requestDigest = argumentsDigest([name, canonicalJson(args)]);
  const relay = (direct: DirectPerform, answer: UpstreamInputAnswer) =>
    relayInput(deps, toolDeps, direct, { provider, name, requestDigest }, answer);
  return {
    tool: name,
    provider: provider.id,
    // The upstream decides what its token may do; any connection to it will do.
    scopes: [],
    // The stand-in's call is the connecting itself.
    purpose:
      name === standInName(provider.upstream!.prefix)
        ? `list your ${displayName} tools`
        : `use ${name} on ${displayName}`,
    requestDigest,
    arguments: args,
    // MCP has no idempotency key: an unknown outcome waits for an operator.
    replayable: false,
    async perform({ token }, _key, direct): Promise<BusinessOutcome> {
      const list = (await deps.lists.listFor(provider, token)).served;
      const served = list.get(name);
      // The stand-in of a list not shown before connecting (upstreamLists.ts): connected now, its tools are listed.
      if (!served && name === standInName(provider.upstream!.prefix)) return connectedOutcome(displayName, list);
      if (!served)
        return {
          status: 'failed',
          outcome: { error: 'unknown_tool', message: `${displayName} has no tool ${name} for you.` },
        };
      // Only while the host's request is here may the upstream ask (a sweep's or a callback's perform
      // has none), and it is offered no more than the host declared.
      const elicitation = direct ? elicitationModes(direct.ctx.capabilities) : undefined;
      // A 2025-11-25 upstream's own questions on the call's stream: asked of this host when it can be, and why not when not.
      const notes: string[] = [];
      const ask = (params: Record<string, unknown>) =>
        askForUpstream(deps, toolDeps, direct, { provider, name }, params, notes);
      let round: Resume | undefined = resume;
      let answer: UpstreamCallAnswer;
      for (let rounds = 0; ; rounds++) {
        answer = await deps.counted(provider, 'tools/call', () =>
          deps.mcp.callTool(provider.upstream!.url, token, served.upstream.name, args, served.upstream, {
            ...(elicitation && { elicitation }),
            ask,
            ...(round && { inputResponses: round.inputResponses }),
            ...(round?.requestState !== undefined && { requestState: round.requestState }),
          }),
        );
        if (answer.kind !== 'input_required' || !direct) break;
        const relayed = await relay(direct, answer);
        // An accepted operation's question is no outcome: its receipt stays pending for the host's answer.
        if (relayed.kind === 'relayed') throw new InputRequiredError(relayed.result, relayed.until);
        if (relayed.kind !== 'asked') return relayed.outcome;
        if (rounds + 1 >= MAX_NESTED_ROUNDS)
          return failed(
            `${displayName} asked for input more than ${MAX_NESTED_ROUNDS} times for ${name}; nothing more was sent.`,
          );
        round = relayed.resume;
      }
      if (answer.kind === 'input_required')
        return {
          status: 'failed',
          outcome: {
            error: 'input_required',
            message: `${displayName} asked for more input before doing ${name} (${Object.keys(answer.inputRequests).length} request(s)) while the operation was performed without you (after you connected, with your request gone), when nobody can be asked: nothing was done. Call the tool again as a new call; its questions are then relayed to you.`,
          },
        };
      if (answer.kind === 'error')
        return {
          status: 'failed',
          outcome: {
            error: 'upstream_error',
            code: answer.code,
            message: [`${displayName} answered ${name} with an error: ${answer.message}`, ...notes].join(' '),
          },
        };
      return {
        status: answer.result['isError'] === true ? 'failed' : 'succeeded',
        outcome: { result: answer.result, ...(notes.length > 0 && { notes }) },
      };
    },
    render: ({ outcome }) => renderOutcome(outcome),
  };
}

/** The upstream's result as the host gets it; the broker's own words for what went wrong before it. */
function renderOutcome(outcome: Record<string, unknown>): ToolCallResult {
  const relayed = outcome['relayed'];
  if (typeof relayed === 'object' && relayed !== null) return relayed as ToolCallResult;
  const result = outcome['result'];
  if (typeof result === 'object' && result !== null) {
    // What the broker did not ask for the upstream, after its own content.
    const notes = Array.isArray(outcome['notes']) ? (outcome['notes'] as unknown[]).map(String) : [];
    const content = (result as { content?: unknown }).content;
    return {
      ...(result as object),
      ...(notes.length > 0 && {
        content: [...(Array.isArray(content) ? content : []), ...notes.map((text) => ({ type: 'text', text }))],
      }),
      resultType: 'complete',
    } as ToolCallResult;
  }
  return errorResult(String(outcome['message'] ?? 'The upstream MCP server did not answer.'), outcome);
}

/** The stand-in's answer: the user is connected, and which tools they now have (the host lists them again). */
function connectedOutcome(
  displayName: string,
  list: ReadonlyMap<string, { descriptor: Record<string, unknown> }>,
): BusinessOutcome {
  const names = [...list.keys()];
  const text =
    names.length === 0
      ? `You are connected to ${displayName}, which lists no tools for you.`
      : `You are connected to ${displayName}. Its tools are now in your tool list (list the tools again to see them): ${names.join(', ')}.`;
  return {
    status: 'succeeded',
    outcome: {
      result: { content: [{ type: 'text', text }], structuredContent: { status: 'connected', tools: names } },
    },
  };
}
