import { z } from 'zod';
import { listReports, REPORTS_PROVIDER } from '../../providers/reportsApi.js';
import { runConnectionTool, type ConnectionCall } from '../connectionTool.js';
import { completeResult, defineTool, parseArguments } from '../defineTool.js';
import { argumentsDigest } from '../requestState.js';
import type { McpToolDeps } from './registry.js';

const inputSchema = z.strictObject({});

/** The operation, for either era. */
export function reportsListCall(rawArgs: unknown, deps: McpToolDeps): ConnectionCall {
  parseArguments('reports_list', inputSchema, rawArgs);
  const apiBase = deps.connection.broker.providers.get(REPORTS_PROVIDER)?.provider.apiBase ?? '';
  return {
    tool: 'reports_list',
    provider: REPORTS_PROVIDER,
    purpose: 'list your reports',
    requestDigest: argumentsDigest(['reports_list']),
    arguments: {},
    async perform(token) {
      return { status: 'succeeded', outcome: { reports: await listReports(deps.fetch, apiBase, token) } };
    },
    render({ outcome }) {
      const reports = (outcome['reports'] ?? []) as { id: string; title: string; createdAt: string }[];
      const text = reports.length > 0 ? reports.map((r) => `${r.id}  ${r.title}  (${r.createdAt})`).join('\n') : 'You have no reports yet.';
      return completeResult(text, { reports });
    },
  };
}

export const reportsList = defineTool({
  name: 'reports_list',
  title: 'List my reports',
  description:
    'Lists your reports at the Report Service. If you have not connected the Report Service yet, the result asks your host to open a connect link (URL elicitation); retry with the requestState after the user has connected.',
  inputSchema,
  annotations: { readOnlyHint: true, openWorldHint: true },
  handler: (args, ctx, deps: McpToolDeps) => runConnectionTool(deps.connection, ctx, reportsListCall(args, deps)),
});
