import { randomBytes } from 'node:crypto';
import { InvalidInputError } from '../../errors/appError.js';
import { invalidParams, McpProtocolError, outageOf, toToolError } from '../toMcp.js';
import type { Logger } from '../../shared/logger.js';
import { isConnectionTool } from '../defineConnectionTool.js';
import { isFormTool, type FormTool } from '../defineFormTool.js';
import { errorResult, type ToolContext } from '../defineTool.js';
import { ElicitResultSchema } from '../elicitationForms.js';
import { elicitationModes, type CallToolResult, type ToolCallResult } from '../protocol.js';
import type { McpToolDeps } from '../toolDeps.js';
import type { ToolRegistry } from '../toolRegistry.js';
import type { RequestChannel } from './requestChannel.js';
import type { LegacySession } from './legacySessions.js';
import { markRequest } from '../../telemetry/spans.js';
import { legacyConnectionCall, type LegacyCallDeps } from './legacyCall.js';

export interface LegacyToolDeps extends LegacyCallDeps {
  tools: ToolRegistry<McpToolDeps>;
  logger: Logger;
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
        await legacyConnectionCall(
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
