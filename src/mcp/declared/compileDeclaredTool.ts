import { defineConnectionTool, type ConnectionTool } from '../defineConnectionTool.js';
import { completeResult, type ToolSpec } from '../defineTool.js';
import type { McpToolDeps } from '../tools/registry.js';
import type { DeclaredEntry } from './declaredEntry.js';
import type { TranslatedInput } from './inputSchema.js';
import { readAnswer } from './providerAnswer.js';
import { buildRequest } from './requestBuild.js';
import type { RequestPlan } from './requestPlan.js';
import { pickFields, renderText, type Picked, type ResponsePlan } from './responsePlan.js';

/** A tool compiled from a TOOLS_FILE entry: a connection tool like any other, with what the file said about it. */
export interface DeclaredTool extends ConnectionTool {
  /** `file`: written in TOOLS_FILE; `starter`: a starter tool (config/starter-tools/) the file enabled by name. */
  source: 'file' | 'starter';
  /** Its verified operations wait for an operator (as HIGH_RISK_TOOLS). */
  highRisk: boolean;
  /** `header`: the operation's idempotency key (its receipt id) is sent in `idempotencyHeader`; `none`: the provider gets no key. */
  idempotency: 'header' | 'none';
  idempotencyHeader: string | undefined;
}

/**
 * A checked entry as defineConnectionTool's tool, so it is served on every
 * lineage with the same URL elicitation, receipts, approvals, reconciliation
 * and ledger as a TypeScript tool. The outcome kept with the receipt is the
 * HTTP status and the picked fields, never the whole answer.
 */
export function compileDeclaredTool(
  entry: DeclaredEntry,
  input: TranslatedInput,
  request: RequestPlan,
  response: ResponsePlan,
  source: DeclaredTool['source'] = 'file',
): DeclaredTool {
  const tool = defineConnectionTool({
    name: entry.name,
    title: entry.title,
    description: entry.description,
    provider: entry.provider,
    scopes: entry.scopes,
    input: input.schema,
    ...(entry.annotations ? { annotations: annotationsOf(entry.annotations) } : {}),
    // idempotency "header": the provider dedupes by the receipt id, so the sweep re-drives on its own;
    // "none": an unknown outcome waits for an operator's re-drive.
    replayable: request.idempotencyHeader !== undefined,
    async perform({ input: args, fetch, idempotencyKey, connection }) {
      const built = buildRequest(entry.name, request, args as Record<string, unknown>, idempotencyKey, connection);
      const answer = await fetch(built.path, built.init);
      const json = await readAnswer(answer, {
        provider: connection.displayName,
        tool: entry.name,
        maxBytes: response.maxBytes,
        json: response.fields.length > 0,
      });
      return { status: answer.status, fields: pickFields(response, json) };
    },
    render(outcome) {
      const fields = (outcome['fields'] ?? {}) as Record<string, Picked>;
      return completeResult(renderText(response, entry.title, fields), fields);
    },
  });
  return {
    ...tool,
    source,
    highRisk: entry.highRisk,
    idempotency: request.idempotencyHeader ? 'header' : 'none',
    idempotencyHeader: request.idempotencyHeader,
  };
}

type Annotations = NonNullable<ToolSpec<TranslatedInput['schema'], McpToolDeps>['annotations']>;

// Only the hints the file sets (exactOptionalPropertyTypes: an absent hint is no key at all).
function annotationsOf(hints: NonNullable<DeclaredEntry['annotations']>): Annotations {
  return Object.fromEntries(Object.entries(hints).filter(([, value]) => value !== undefined)) as Annotations;
}
