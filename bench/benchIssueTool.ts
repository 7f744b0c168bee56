import { z } from 'zod';
import type { BrokerModules } from './brokerModules.js';

// bench:mcp's twin of bench/mcpBenchTools.yaml's github_issue_declared, written
// as an engineer writes a tool with defineConnectionTool: the same input, the
// same request (GET /repos/{owner}/{repo}/issues/{number}), the same fields and
// text, so the two differ only in how the tool is made. It is made with the
// modules of the code form whose broker serves it (bench/brokerModules.ts).

const IssueSchema = z.object({
  number: z.number().int(),
  title: z.string(),
  state: z.string(),
  user: z.object({ login: z.string() }),
  labels: z.array(z.object({ name: z.string() })).max(100),
  comments: z.number().int(),
  html_url: z.string(),
});

export const GITHUB_ISSUE_CODED = 'github_issue_coded';

export const githubIssueCoded = ({
  defineConnectionTool,
  completeResult,
  AppError,
  providerRefusal,
  plainText,
  GITHUB_PROVIDER,
}: BrokerModules['tool']) =>
  defineConnectionTool({
    name: GITHUB_ISSUE_CODED,
    title: 'Read a GitHub issue (defineConnectionTool)',
    description: 'Reads one GitHub issue - its title, state, author, labels and comment count.',
    provider: GITHUB_PROVIDER,
    scopes: ['repo'],
    input: z.strictObject({
      owner: z
        .string()
        .max(39)
        .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,38}$/)
        .describe('The account that owns the repository (alice)'),
      repo: z
        .string()
        .max(100)
        .regex(/^[A-Za-z0-9._-]{1,100}$/)
        .describe("The repository's name (demo)"),
      number: z.number().int().min(1).max(1_000_000_000).describe("The issue's number"),
    }),
    annotations: { readOnlyHint: true, openWorldHint: true },
    // As the declared GET, which sends no idempotency key.
    replayable: false,
    async perform({ input, fetch }) {
      const what = `read ${input.owner}/${input.repo}#${input.number}`;
      const response = await fetch(
        `/repos/${encodeURIComponent(input.owner)}/${encodeURIComponent(input.repo)}/issues/${input.number}`,
      );
      const json: unknown = await response.json().catch(() => undefined);
      if (response.status !== 200) throw providerRefusal('GitHub', response.status, json, what);
      const parsed = IssueSchema.safeParse(json);
      if (!parsed.success)
        throw new AppError('upstream_auth_failed', `GitHub answered ${what} with an unexpected body.`);
      const issue = parsed.data;
      // Foreign text: plain and bounded, as a declared tool's picked strings are.
      const text = (value: string) => plainText(value).slice(0, 2_000);
      return {
        number: issue.number,
        title: text(issue.title),
        state: text(issue.state),
        author: text(issue.user.login),
        labels: issue.labels.map((l) => text(l.name)),
        comments: issue.comments,
        url: text(issue.html_url),
      };
    },
    render(outcome) {
      const labels = (outcome['labels'] as string[] | undefined) ?? [];
      const text = `#${String(outcome['number'])} ${String(outcome['title'])} (${String(outcome['state'])}; by ${String(outcome['author'])}; labels: ${labels.join(', ') || '(none)'}; ${String(outcome['comments'])} comments): ${String(outcome['url'])}`;
      return completeResult(text, outcome);
    },
  });
