import { z } from 'zod';
import { GITHUB_PROVIDER, listMyIssues, type Issue } from './githubApi.js';
import { defineConnectionTool } from '../defineConnectionTool.js';
import { completeResult } from '../defineTool.js';

export const githubListIssues = defineConnectionTool({
  name: 'github_list_issues',
  title: 'List my GitHub issues',
  description:
    'Lists GitHub issues that involve you (assigned to you by default; or created by you, mentioning you, subscribed, or in your repositories). If you have not connected GitHub yet, the result asks your host to open a connect link (URL elicitation); retry with the requestState after the user has connected.',
  provider: GITHUB_PROVIDER,
  scopes: ['repo'],
  input: z.strictObject({
    filter: z.enum(['assigned', 'created', 'mentioned', 'subscribed', 'repos', 'all']).default('assigned'),
    state: z.enum(['open', 'closed', 'all']).default('open'),
    limit: z.number().int().min(1).max(50).default(20),
  }),
  annotations: { readOnlyHint: true, openWorldHint: true },
  replayable: true,
  purpose: () => 'list your GitHub issues',
  perform: async ({ input, fetch }) => ({
    issues: await listMyIssues(fetch, { filter: input.filter, state: input.state, perPage: input.limit }),
  }),
  render(outcome) {
    const issues = (outcome['issues'] ?? []) as Issue[];
    const text =
      issues.length > 0
        ? issues.map((i) => `${i.repository}#${i.number}  ${i.title}  (${i.state})`).join('\n')
        : 'No issues match.';
    return completeResult(text, { issues });
  },
});
