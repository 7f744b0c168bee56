import { z } from 'zod';
import { createIssue, GITHUB_PROVIDER, REPOSITORY, type Issue } from './githubApi.js';
import { quoteForeign } from '../../security/displayText.js';
import { defineConnectionTool } from '../defineConnectionTool.js';
import { completeResult } from '../defineTool.js';

export const githubCreateIssue = defineConnectionTool({
  name: 'github_create_issue',
  title: 'Open a GitHub issue',
  description:
    'Opens an issue in a GitHub repository (owner/name), once: a retried call never opens a second one. With the development server, every demo user owns <login>/demo (e.g. alice/demo). If you have not connected GitHub yet, the result asks your host to open a connect link (URL elicitation); retry with the requestState after the user has connected.',
  provider: GITHUB_PROVIDER,
  scopes: ['repo'],
  input: z.strictObject({
    repository: z.string().regex(REPOSITORY, 'must be owner/name'),
    title: z.string().trim().min(1).max(256),
    body: z.string().max(10_000).optional(),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  // GitHub's REST API honours no idempotency key: an unknown outcome waits for an operator.
  replayable: false,
  // Model-chosen text: quoted and made plain, so the consent page can set it apart.
  purpose: (input) => `open the issue ${quoteForeign(input.title, 80)} in ${input.repository}`,
  async perform({ input, fetch, idempotencyKey }) {
    return { issue: await createIssue(fetch, input, idempotencyKey) };
  },
  render(outcome) {
    const issue = outcome['issue'] as Issue;
    return completeResult(`Opened ${issue.repository}#${issue.number} "${issue.title}": ${issue.url}`, {
      status: 'created',
      issue,
    });
  },
});
