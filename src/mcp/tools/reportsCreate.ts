import { z } from 'zod';
import { createReport, REPORTS_PROVIDER } from '../../providers/reportsApi.js';
import { quoteForeign } from '../../security/displayText.js';
import { runConnectionTool, type ConnectionCall } from '../connectionTool.js';
import { completeResult, defineTool, parseArguments } from '../defineTool.js';
import { argumentsDigest } from '../requestState.js';
import type { McpToolDeps } from './registry.js';

const inputSchema = z.strictObject({ title: z.string().trim().min(1).max(200), body: z.string().max(10_000) });

/** The operation, for either era: what to do with a connection, and how to say what happened. */
export function reportsCreateCall(rawArgs: unknown, deps: McpToolDeps): ConnectionCall {
  const args = parseArguments('reports_create', inputSchema, rawArgs);
  const apiBase = deps.connection.broker.providers.get(REPORTS_PROVIDER)?.provider.apiBase ?? '';
  return {
    tool: 'reports_create',
    provider: REPORTS_PROVIDER,
    // The title is the model's choice: quoted and made plain, so the consent page can set it apart.
    purpose: `create the report ${quoteForeign(args.title, 80)}`,
    requestDigest: argumentsDigest(['reports_create', args.title, args.body]),
    arguments: args,
    async perform(token, idempotencyKey) {
      const { report, replayed } = await createReport(deps.fetch, apiBase, token, args, idempotencyKey);
      return { status: 'succeeded', outcome: { report, replayed } };
    },
    render({ outcome }) {
      const report = outcome['report'] as { id: string; title: string };
      return completeResult(`Created report ${report.id} "${report.title}".`, { status: 'created', report });
    },
  };
}

export const reportsCreate = defineTool({
  name: 'reports_create',
  title: 'Create a report',
  description:
    'Creates a report at the Report Service (once: a retried call never creates a second one). If you have not connected the Report Service yet, the result asks your host to open a connect link (URL elicitation); retry with the requestState after the user has connected.',
  inputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  handler: (args, ctx, deps: McpToolDeps) => runConnectionTool(deps.connection, ctx, reportsCreateCall(args, deps)),
});
