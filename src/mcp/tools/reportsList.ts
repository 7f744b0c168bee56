import { z } from 'zod';
import { listReports, REPORTS_PROVIDER } from './reportsApi.js';
import { defineConnectionTool } from '../defineConnectionTool.js';
import { completeResult } from '../defineTool.js';

export const reportsList = defineConnectionTool({
  name: 'reports_list',
  title: 'List my reports',
  description:
    'Lists your reports at the Report Service. If you have not connected the Report Service yet, the result asks your host to open a connect link (URL elicitation); retry with the requestState after the user has connected.',
  provider: REPORTS_PROVIDER,
  scopes: ['reports:read'],
  input: z.strictObject({}),
  annotations: { readOnlyHint: true, openWorldHint: true },
  replayable: true,
  purpose: () => 'list your reports',
  perform: async ({ fetch }) => ({ reports: await listReports(fetch) }),
  render(outcome) {
    const reports = (outcome['reports'] ?? []) as { id: string; title: string; createdAt: string }[];
    const text =
      reports.length > 0
        ? reports.map((r) => `${r.id}  ${r.title}  (${r.createdAt})`).join('\n')
        : 'You have no reports yet.';
    return completeResult(text, { reports });
  },
});
