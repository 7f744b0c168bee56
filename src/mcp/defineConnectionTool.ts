import { z } from 'zod';
import { connectionFetch, type ConnectionFetch, type ConnectionInfo } from './connectionFetch.js';
import { ProviderRefusedError } from '../providers/providerRefusal.js';
import type { StoredAccess } from '../broker/forgetConnection.js';
import type { ConnectionCall } from './calls/connectionCall.js';
import { runConnectionTool } from './connectionTool.js';
import { defineTool, errorResult, parseArguments, type Tool, type ToolSpec } from './defineTool.js';
import type { ToolCallResult } from './protocol.js';
import { argumentsDigest } from './requestState.js';
import type { McpToolDeps } from './toolDeps.js';

export interface ConnectionToolSpec<S extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  /** The provider id (providers list) whose connection the tool acts through. */
  provider: string;
  /** The scopes of that provider the tool needs. */
  scopes: readonly string[];
  input: S;
  annotations?: ToolSpec<S, McpToolDeps>['annotations'];
  /**
   * Whether the provider dedupes a repeated call by `idempotencyKey` (the Report Service does; GitHub,
   * Slack and most APIs do not), so the reconcile sweep may perform an operation whose outcome is
   * unknown (a crash, a lost answer) again on its own. Default false: such an operation waits as a
   * reconciliation finding until an operator re-drives it (`broker ledger redrive`). Reads may say
   * true: doing them twice changes nothing.
   */
  replayable?: boolean;
  /** What the operation is for, shown with the connect link and in refusals ("create the report …"); default: "use <name>". */
  purpose?(input: z.output<S>): string;
  /**
   * Does the work, once per accepted operation: `idempotencyKey` is the same for every attempt of one
   * operation (send it to providers that honour one). The outcome is kept with the receipt, so it must
   * be JSON and hold nothing secret.
   */
  perform(call: {
    input: z.output<S>;
    fetch: ConnectionFetch;
    idempotencyKey: string;
    connection: ConnectionInfo;
  }): Promise<Record<string, unknown>>;
  /** The result for an outcome, fresh or read back from its receipt. */
  render(outcome: Record<string, unknown>): ToolCallResult;
}

/** A tool that acts through a third-party connection. */
export interface ConnectionTool extends Tool<McpToolDeps> {
  provider: string;
  scopes: readonly string[];
  /** The operation for raw arguments: what every lineage (both eras, and the re-drive) runs. */
  connectionCall(rawArgs: unknown, deps: McpToolDeps): ConnectionCall;
}

/**
 * A tool defined once and served on both eras: the modern handler runs the
 * MRTR lineage (connectionTool.ts), the 2025-11-25 adapter runs the nested or
 * -32042 lineage with the same `connectionCall`, and the reconcile sweep
 * rebuilds it from kept arguments. Two calls are the same operation when their
 * parsed inputs are equal (field by field, in the schema's order).
 */
export function defineConnectionTool<S extends z.ZodObject>(spec: ConnectionToolSpec<S>): ConnectionTool {
  // A tool whose own input has an `account` keeps it as its own: its calls choose by default or by asking.
  const ownsAccount = 'account' in spec.input.shape;
  const schema = ownsAccount ? spec.input : spec.input.extend({ account: AccountArgument });
  const build = (parsed: z.output<S> & { account?: string }, deps: McpToolDeps): ConnectionCall => {
    const { account, ...rest } = parsed;
    const input = (ownsAccount ? parsed : rest) as z.output<S>;
    const named = ownsAccount ? undefined : account;
    const configured = deps.connection.broker.providers.get(spec.provider)?.provider;
    const connectionOf = ({ connection: stored }: StoredAccess): ConnectionInfo => ({
      provider: spec.provider,
      displayName: configured?.displayName ?? spec.provider,
      // A connection given its own API base (Salesforce's instance) is called there, never on the provider's default.
      apiBase: stored?.apiBase ?? configured?.apiBase ?? '',
      scopes: spec.scopes,
      apiHeaders: configured?.apiHeaders ?? {},
      account: { subject: stored?.upstreamSubject, name: stored?.upstreamName },
      grantedScopes: stored?.grantedScopes ?? [],
      metadata: stored?.metadata ?? {},
      deadTokenAnswer: configured?.deadTokenAnswer,
    });
    return {
      tool: spec.name,
      provider: spec.provider,
      scopes: spec.scopes,
      purpose: spec.purpose?.(input) ?? `use ${spec.name}`,
      // `account` joins the digest only when given, so a call naming none is the operation it always was.
      requestDigest: argumentsDigest([
        spec.name,
        ...Object.keys(spec.input.shape).map((key) => digestPart(input[key as keyof typeof input])),
        ...(named === undefined ? [] : ['account', named]),
      ]),
      arguments: { ...(input as Record<string, unknown>), ...(named !== undefined && { account: named }) },
      choice: { account: named },
      replayable: spec.replayable ?? false,
      async perform(access, idempotencyKey) {
        const connection = connectionOf(access);
        try {
          const outcome = await spec.perform({
            input,
            fetch: connectionFetch(deps.fetch, connection, access.token),
            idempotencyKey,
            connection,
          });
          return { status: 'succeeded', outcome };
        } catch (err) {
          // A definite refusal is this operation's outcome, kept with its receipt: no retry sends it again.
          if (err instanceof ProviderRefusedError)
            return {
              status: 'failed',
              outcome: { error: 'provider_refused', httpStatus: err.status, message: err.message },
            };
          throw err;
        }
      },
      render: ({ status, outcome }) =>
        status === 'failed' && outcome['error'] === 'provider_refused'
          ? errorResult(String(outcome['message']), outcome)
          : spec.render(outcome),
    };
  };
  const tool = defineTool({
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema: schema,
    ...(spec.annotations ? { annotations: spec.annotations } : {}),
    handler: (input, ctx, deps: McpToolDeps) =>
      runConnectionTool(
        { ...deps.connection, forms: deps.forms },
        ctx,
        build(input as z.output<S> & { account?: string }, deps),
      ),
  });
  return {
    ...tool,
    provider: spec.provider,
    scopes: spec.scopes,
    connectionCall: (rawArgs, deps) =>
      build(parseArguments(spec.name, schema, rawArgs) as z.output<S> & { account?: string }, deps),
  };
}

/** Which of the user's connections to the provider the call uses (broker/connectionChoice.ts). */
const AccountArgument = z
  .string()
  .min(1)
  .max(256)
  .optional()
  .describe(
    "Which of the user's connected accounts at the provider to use, by its name there or its connection id. Leave it out to use the user's default; with several accounts and no default, the user is asked.",
  );

// Strings as they are, anything else as its JSON; an absent field as NUL, which no argument holds (defineTool.ts refuses it).
function digestPart(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '\u0000');
}

/** Whether a tool acts through a connection (and so runs the connect lineages). */
export function isConnectionTool(tool: Tool<McpToolDeps>): tool is ConnectionTool {
  return 'connectionCall' in tool && typeof tool.connectionCall === 'function';
}
