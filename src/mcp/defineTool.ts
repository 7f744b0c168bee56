import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { InvalidInputError } from '../errors/appError.js';
import { McpProtocolError, outageOf, toToolError } from './toMcp.js';
import type { Logger } from '../shared/logger.js';
import type { CallToolResult, ClientCapabilities, ToolCallResult } from './protocol.js';

/** What a tool handler knows about the request besides its arguments. */
export interface ToolContext {
  principal: Principal;
  /** The OAuth client the principal's token was issued to (client_id / azp), when it names one. */
  clientId: string | undefined;
  capabilities: ClientCapabilities;
  /** MRTR retry fields, untrusted until the tool has checked them. */
  inputResponses: Record<string, unknown> | undefined;
  requestState: string | undefined;
  requestId: string;
  logger: Logger;
}

export interface ToolSpec<S extends z.ZodObject, D> {
  name: string;
  title: string;
  description: string;
  inputSchema: S;
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  /** Client capabilities every call needs (checked per request, answered with -32021). */
  requires?: ClientCapabilities;
  handler(args: z.output<S>, ctx: ToolContext, deps: D): Promise<ToolCallResult>;
}

export interface Tool<D> {
  name: string;
  requires: ClientCapabilities | undefined;
  /** The tools/list entry, computed once. */
  descriptor: Record<string, unknown>;
  call(rawArgs: unknown, ctx: ToolContext, deps: D): Promise<ToolCallResult>;
}

/**
 * The one try/catch around tools: arguments are parsed before
 * the handler runs; AppErrors become `isError` results through mcp/toMcp.ts;
 * protocol errors (a bad requestState) and the broker's own outage pass
 * through as JSON-RPC errors.
 */
export function defineTool<S extends z.ZodObject, D>(spec: ToolSpec<S, D>): Tool<D> {
  // The input side: a field with a default is one the host may leave out, so it is not listed as required.
  const inputSchema = z.toJSONSchema(spec.inputSchema, { target: 'draft-2020-12', io: 'input' });
  delete inputSchema.$schema;
  const descriptor = {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema,
    ...(spec.annotations ? { annotations: spec.annotations } : {}),
  };
  return {
    name: spec.name,
    requires: spec.requires,
    descriptor,
    async call(rawArgs, ctx, deps) {
      try {
        return await spec.handler(parseArguments(spec.name, spec.inputSchema, rawArgs), ctx, deps);
      } catch (err) {
        if (err instanceof McpProtocolError) throw err;
        const outage = outageOf(err);
        if (outage) throw outage;
        const { text, structured, log, code } = toToolError(err);
        if (log) ctx.logger.error({ err, requestId: ctx.requestId, tool: spec.name }, 'tool failed');
        // The code only: the message is for the model and names what it asked for (note titles, workspace URIs).
        else ctx.logger.info({ requestId: ctx.requestId, tool: spec.name, error: code }, 'tool refused the call');
        return errorResult(text, structured);
      }
    },
  };
}

/** Tool arguments from outside, parsed with the tool's schema; InvalidInputError names each bad field. */
export function parseArguments<S extends z.ZodType>(tool: string, schema: S, rawArgs: unknown): z.output<S> {
  // Postgres text cannot hold NUL, and no tool has a use for it: refused at the edge for every tool.
  if (containsNul(rawArgs))
    throw new InvalidInputError(`Invalid arguments for ${tool}: strings must not contain NUL (\\u0000) characters.`);
  const parsed = schema.safeParse(rawArgs ?? {});
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`);
    throw new InvalidInputError(`Invalid arguments for ${tool}. ${fields.join('; ')}`);
  }
  return parsed.data;
}

function containsNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (depth > 32 || value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([key, inner]) => key.includes('\u0000') || containsNul(inner, depth + 1));
}

/** A complete result with the same data as text (for any host) and as structuredContent. */
export function completeResult(text: string, structured: Record<string, unknown>): ToolCallResult {
  return { resultType: 'complete', content: [{ type: 'text', text }], structuredContent: structured };
}

/** A tool-level failure (`isError: true`): the model reads the text and may try again; not a JSON-RPC error. */
export function errorResult(text: string, structured?: Record<string, unknown>): CallToolResult {
  return {
    resultType: 'complete',
    isError: true,
    content: [{ type: 'text', text }],
    ...(structured ? { structuredContent: structured } : {}),
  };
}
