import type { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { InvalidInputError } from '../errors/appError.js';
import { defineTool, parseArguments, type Tool, type ToolContext, type ToolSpec } from './defineTool.js';
import { ElicitResultSchema } from './elicitationForms.js';
import type { ElicitFormRequest, ToolCallResult } from './protocol.js';
import { openPresentedState, type StateBinding } from './requestState.js';
import type { McpToolDeps } from './toolDeps.js';

export type ElicitReply = z.output<typeof ElicitResultSchema>;

/** The question a form tool asks, and the ids it offered (the only ones an answer may name). */
export interface FormQuestion {
  form: ElicitFormRequest;
  offered: string[];
}

/** What one asking allows: a single-use nonce for the answer, until `expiresAt`. */
export interface FormClaim {
  principal: Principal;
  nonce: string;
  expiresAt: Date;
  offered: string[];
  /** Whether the same question can still be answered later (a cancelled MRTR retry can; a nested request cannot). */
  answerableLater: boolean;
}

export interface FormToolSpec<S extends z.ZodObject> extends Omit<ToolSpec<S, McpToolDeps>, 'handler' | 'requires'> {
  /** The key of the form in inputRequests and of its answer in inputResponses. */
  inputKey: string;
  /** Binds an answer to the arguments it was asked for (requestState phase and digest). */
  phase: string;
  digest(input: z.output<S>): string;
  /** The question for these arguments. */
  ask(input: z.output<S>, ctx: ToolContext, deps: McpToolDeps): Promise<FormQuestion>;
  /** The same question again, for the ids offered before (an MRTR retry that carried no answer). */
  askAgain(input: z.output<S>, offered: string[], principal: Principal, deps: McpToolDeps): Promise<ElicitFormRequest>;
  /** The user's answer (undefined: none arrived in time); the only place the tool acts. */
  answer(
    input: z.output<S>,
    reply: ElicitReply | undefined,
    claim: FormClaim,
    deps: McpToolDeps,
  ): Promise<ToolCallResult>;
}

/** A tool that acts only after the user answers a form. */
export interface FormTool extends Tool<McpToolDeps> {
  /** The tool's question and answer, for a transport that asks on its own (the 2025-11-25 nested request). */
  form: {
    parse(rawArgs: unknown): Record<string, unknown>;
    ask(input: Record<string, unknown>, ctx: ToolContext, deps: McpToolDeps): Promise<FormQuestion>;
    answer(
      input: Record<string, unknown>,
      reply: ElicitReply | undefined,
      claim: FormClaim,
      deps: McpToolDeps,
    ): Promise<ToolCallResult>;
  };
}

/**
 * A tool defined once and served on both eras: here, the 2026-07-28 transport
 * (the first call answers input_required with the form and a sealed
 * requestState; the retry carries the answer); the 2025-11-25 adapter asks the
 * same question as an elicitation/create request on the call's stream and
 * hands the answer to the same `answer`. On both, every form passes the form
 * audit first (deps.forms): a refused one is never sent, the call ends in its error.
 */
export function defineFormTool<S extends z.ZodObject>(spec: FormToolSpec<S>): FormTool {
  const {
    inputKey,
    phase: _phase,
    digest: _digest,
    ask: _ask,
    askAgain: _askAgain,
    answer: _answer,
    ...described
  } = spec;
  const admitted = async (form: ElicitFormRequest, ctx: ToolContext, deps: McpToolDeps) => {
    await deps.forms.admit(form, {
      tool: spec.name,
      origin: 'broker',
      actor: `mcp:${ctx.principal.sub}`,
      requestId: ctx.requestId,
      logger: ctx.logger,
    });
    return form;
  };
  const ask = async (input: z.output<S>, ctx: ToolContext, deps: McpToolDeps): Promise<FormQuestion> => {
    const question = await spec.ask(input, ctx, deps);
    return { ...question, form: await admitted(question.form, ctx, deps) };
  };
  const tool = defineTool({
    ...described,
    requires: { elicitation: { form: {} } },
    async handler(input, ctx, deps: McpToolDeps) {
      const binding: StateBinding = {
        clientId: ctx.clientId,
        principal: ctx.principal,
        method: 'tools/call',
        tool: spec.name,
        digest: spec.digest(input),
        phase: spec.phase,
      };
      if (ctx.requestState === undefined) {
        const { form, offered } = await ask(input, ctx, deps);
        const { token } = await deps.requestState.seal(binding, { candidates: offered });
        return { resultType: 'input_required', inputRequests: { [inputKey]: form }, requestState: token };
      }
      const state = await openPresentedState(deps.requestState, ctx.requestState, binding);
      const raw = ctx.inputResponses?.[inputKey];
      if (raw === undefined) {
        // No answer yet: ask again with the same, still valid, state (a retry without inputResponses is not an answer; the state stays valid until it expires).
        const form = await admitted(await spec.askAgain(input, state.candidates, state.principal, deps), ctx, deps);
        return { resultType: 'input_required', inputRequests: { [inputKey]: form }, requestState: ctx.requestState };
      }
      const reply = ElicitResultSchema.safeParse(raw);
      if (!reply.success)
        throw new InvalidInputError(
          `inputResponses.${inputKey} is not an elicitation result ({action, content}). Nothing was done.`,
        );
      return spec.answer(
        input,
        reply.data,
        {
          principal: state.principal,
          nonce: state.nonce,
          expiresAt: state.expiresAt,
          offered: state.candidates,
          answerableLater: true,
        },
        deps,
      );
    },
  });
  // The nested transport hands back what parse produced: the same schema's output.
  const own = (input: Record<string, unknown>) => input as z.output<S>;
  return {
    ...tool,
    form: {
      parse: (rawArgs) => parseArguments(spec.name, spec.inputSchema, rawArgs) as Record<string, unknown>,
      ask: (input, ctx, deps) => ask(own(input), ctx, deps),
      answer: (input, reply, claim, deps) => spec.answer(own(input), reply, claim, deps),
    },
  };
}

export function isFormTool(tool: Tool<McpToolDeps>): tool is FormTool {
  return 'form' in tool && typeof tool.form === 'object' && tool.form !== null;
}
