import { z } from 'zod';
import { defineConnectionTool } from '../../../src/mcp/defineConnectionTool.js';
import { completeResult } from '../../../src/mcp/defineTool.js';

// An operator's tool module (TOOL_MODULES): one definition, no era in sight.

export const reportsCount = defineConnectionTool({
  name: 'reports_count',
  title: 'Count my reports',
  description: 'Counts your reports at the Report Service whose title contains `titleContains`.',
  provider: 'reports',
  scopes: ['reports:read'],
  input: z.strictObject({ titleContains: z.string().max(100) }),
  annotations: { readOnlyHint: true, openWorldHint: true },
  purpose: () => 'count your reports',
  async perform({ input, fetch }) {
    const response = await fetch('/reports', { headers: { accept: 'application/json' } });
    const { reports } = z.object({ reports: z.array(z.object({ title: z.string() })) }).parse(await response.json());
    return { count: reports.filter((r) => r.title.includes(input.titleContains)).length };
  },
  render: (outcome) =>
    completeResult(`You have ${String(outcome['count'])} such reports.`, { count: outcome['count'] }),
});
