import { beforeAll, describe, expect, it } from 'vitest';
import type { StarterTool } from '../../../src/mcp/declared/starterRef.js';
import { readStarterTools } from '../../../src/mcp/declared/starterTools.js';
import {
  declareTools,
  ToolsFileError,
  type ToolsFileContext,
  type ToolsProvider,
} from '../../../src/mcp/declared/toolsFile.js';

// A TOOLS_FILE entry `{ starter: <name> }` (and its `provider` and `name`):
// bound to the configured provider built from the starter's catalog entry,
// or refused with a problem listed beside the file's others.

let starters: ReadonlyMap<string, StarterTool>;
beforeAll(async () => {
  starters = (await readStarterTools()).starters;
});

const GHE: ToolsProvider = { id: 'gh-enterprise', catalog: 'github', scopes: ['repo', 'read:user'] };
const context = (...providers: ToolsProvider[]): ToolsFileContext => ({
  providers: [{ id: 'reports', scopes: ['openid', 'reports:read'] }, ...providers],
  taken: [{ name: 'github_create_issue', source: 'built-in' }],
  starters,
});

function problemsOf(entries: unknown[], ctx: ToolsFileContext): readonly string[] {
  try {
    declareTools(entries, ctx, 'TOOLS_FILE tools.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ToolsFileError);
    return (err as ToolsFileError).problems;
  }
  throw new Error('the file was accepted');
}

describe('a starter entry in TOOLS_FILE', () => {
  it('serves the starter bound to the one provider built from its catalog entry, whatever its id', () => {
    const [repos, ...rest] = declareTools(
      [{ starter: 'github_list_repos' }, { starter: 'github_comment_issue' }],
      context(GHE),
      'x',
    );
    expect(repos).toMatchObject({
      name: 'github_list_repos',
      provider: 'gh-enterprise',
      scopes: ['repo'],
      source: 'starter',
      idempotency: 'none',
    });
    expect(repos?.descriptor).toMatchObject({
      name: 'github_list_repos',
      title: 'List my GitHub repositories',
      annotations: { readOnlyHint: true },
    });
    expect(rest.map((t) => [t.name, t.provider, t.source])).toEqual([
      ['github_comment_issue', 'gh-enterprise', 'starter'],
    ]);
  });

  it('takes the provider an entry names, and a name of its own, so one starter serves two providers', () => {
    const dotCom: ToolsProvider = { id: 'github', catalog: 'github', scopes: ['repo'] };
    const tools = declareTools(
      [
        { starter: 'github_get_issue', provider: 'github' },
        { starter: 'github_get_issue', provider: 'gh-enterprise', name: 'ghe_get_issue' },
      ],
      context(dotCom, GHE),
      'x',
    );
    expect(tools.map((t) => [t.name, t.provider, t.source])).toEqual([
      ['github_get_issue', 'github', 'starter'],
      ['ghe_get_issue', 'gh-enterprise', 'starter'],
    ]);
    expect(tools[1]?.descriptor).toMatchObject({ name: 'ghe_get_issue', title: 'Read a GitHub issue' });
  });

  it('sits beside tools the file declares itself', () => {
    const own = {
      name: 'reports_count',
      title: 'Count reports',
      description: 'Counts them.',
      provider: 'reports',
      scopes: ['reports:read'],
      inputSchema: { type: 'object', additionalProperties: false, properties: {} },
      request: { method: 'GET', path: '/reports' },
    };
    expect(
      declareTools([own, { starter: 'github_list_repos' }], context(GHE), 'x').map((t) => [t.name, t.source]),
    ).toEqual([
      ['reports_count', 'file'],
      ['github_list_repos', 'starter'],
    ]);
  });

  it('lists every problem: an unknown starter, an unconfigured catalog entry, a provider unknown, custom or of another catalog entry, two candidates, other fields, scopes, names', () => {
    const slack: ToolsProvider = { id: 'slack-work', catalog: 'slack', scopes: ['search:read'] };
    const problems = problemsOf(
      [
        { starter: 'github_list_repositories' },
        { starter: 'linear_list_issues' },
        { starter: 'github_list_repos', provider: 'gitlab', name: 'repos_on_gitlab' },
        { starter: 'github_list_repos', provider: 'reports', name: 'repos_on_reports' },
        { starter: 'github_list_repos', provider: 'slack-work', name: 'repos_on_slack' },
        { starter: 'slack_post_message' },
        { starter: 'github_get_issue', scopes: ['admin:org'], title: 'Mine' },
        { starter: 'github_comment_issue', name: 'github_create_issue', provider: 'github' },
        { starter: 'github_list_repos' },
        { starter: 'github_list_repos', provider: 'github' },
      ],
      context(slack, GHE, { id: 'github', catalog: 'github', scopes: ['repo'] }),
    );
    expect(problems).toEqual([
      expect.stringMatching(
        /^\[0\] \(github_list_repositories\) starter: "github_list_repositories" is not a starter tool \(starters: .*github_list_repos, .*\)$/,
      ),
      '[1] (linear_list_issues) starter: linear_list_issues is written for the linear catalog entry, and no configured provider is built from it (add a PROVIDERS_FILE entry with catalog: linear)',
      '[2] (repos_on_gitlab) provider: "gitlab" is not a configured provider (configured: reports, slack-work, gh-enterprise, github)',
      '[3] (repos_on_reports) provider: reports is a custom entry; github_list_repos is written for the github catalog entry',
      '[4] (repos_on_slack) provider: slack-work is built from the slack catalog entry; github_list_repos is written for the github catalog entry',
      '[5] (slack_post_message) scopes: slack_post_message needs the scopes chat:write of slack-work, which its provider entry does not ask for',
      '[6] (github_get_issue) scopes, title: a starter entry takes only starter, provider and name',
      '[7] (github_create_issue) name: github_create_issue is already a built-in tool',
      '[8] (github_list_repos) provider: github_list_repos could be bound to gh-enterprise or github (each built from the github catalog entry); name one',
      '[9] (github_list_repos) name: github_list_repos is declared twice',
    ]);
  });

  it('is refused by name when no starter tools were read', () => {
    expect(problemsOf([{ starter: 'github_list_repos' }], { ...context(GHE), starters: new Map() })).toEqual([
      '[0] (github_list_repos) starter: "github_list_repos" is not a starter tool (starters: none)',
    ]);
  });
});
