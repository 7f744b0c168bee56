import { z } from 'zod';
import { createReport, REPORTS_PROVIDER } from './reportsApi.js';
import { quoteForeign } from '../../security/displayText.js';
import { defineConnectionTool } from '../defineConnectionTool.js';
import { completeResult } from '../defineTool.js';

export const reportsCreate = defineConnectionTool({
  name: 'reports_create',
  title: 'Create a report',
  description:
    'Creates a report at the Report Service (once: a retried call never creates a second one). If you have not connected the Report Service yet, the result asks your host to open a connect link (URL elicitation); retry with the requestState after the user has connected.',
  provider: REPORTS_PROVIDER,
  scopes: ['reports:write'],
  input: z.strictObject({ title: z.string().trim().min(1).max(200), body: z.string().max(10_000) }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  // The Report Service keeps each Idempotency-Key's answer: a re-drive with the receipt's key creates nothing twice.
  replayable: true,
  // The title is the model's choice: quoted and made plain, so the consent page can set it apart.
  purpose: (input) => `create the report ${quoteForeign(input.title, 80)}`,
  async perform({ input, fetch, idempotencyKey }) {
    const { report, replayed } = await createReport(fetch, input, idempotencyKey);
    return { report, replayed };
  },
  render(outcome) {
    const report = outcome['report'] as { id: string; title: string };
    return completeResult(`Created report ${report.id} "${report.title}".`, { status: 'created', report });
  },
});
