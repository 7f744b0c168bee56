import { z } from 'zod';
import { listReports, REPORTS_PROVIDER } from '../../providers/reportsApi.js';
import { runConnectionTool } from '../connectionTool.js';
import { completeResult, defineTool } from '../defineTool.js';
import { argumentsDigest } from '../requestState.js';
import type { McpToolDeps } from './registry.js';

export const reportsList = defineTool({
  name: 'reports_list',
  title: 'List my reports',
  description:
    'Lists your reports at the Report Service. If you have not connected the Report Service yet, the result asks your host to open a connect link (URL elicitation); retry with the requestState after the user has connected.',
  inputSchema: z.strictObject({}),
  annotations: { readOnlyHint: true, openWorldHint: true },
  async handler(_args, ctx, deps: McpToolDeps) {
    const apiBase = deps.connection.broker.providers.get(REPORTS_PROVIDER)!.provider.apiBase;
    return runConnectionTool(deps.connection, ctx, {
      tool: 'reports_list',
      provider: REPORTS_PROVIDER,
      purpose: 'list your reports',
      requestDigest: argumentsDigest(['reports_list']),
      async perform(token) {
        const reports = await listReports(deps.fetch, apiBase, token);
        return { status: 'succeeded', outcome: { reports } };
      },
      render({ outcome }) {
        const reports = (outcome['reports'] ?? []) as { id: string; title: string; createdAt: string }[];
        const text = reports.length > 0 ? reports.map((r) => `${r.id}  ${r.title}  (${r.createdAt})`).join('\n') : 'You have no reports yet.';
        return completeResult(text, { reports });
      },
    });
  },
});
