import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runTs } from '../support/brokerProcess.js';

// `broker tools list|check` as an operator runs it: a separate process, configured
// through the environment only (TOOLS_FILE, PROVIDERS_FILE, TOOL_MODULES).

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'broker-tools-cli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function toolsFile(name: string, entries: unknown[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, stringify(entries));
  return file;
}

async function tools(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; output: string }> {
  const run = runTs('src/cli/broker.ts', ['tools', ...args], {
    NODE_ENV: 'development',
    DATA_DIR: join(dir, 'no-data'),
    ...env,
  });
  let stdout = '';
  run.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  return { code: (await run.exited).code, stdout, output: run.output() };
}

const countReports = {
  name: 'reports_count_declared',
  title: 'Count my reports',
  description: 'Counts your reports.',
  provider: 'reports',
  scopes: ['reports:read'],
  inputSchema: { type: 'object', additionalProperties: false, properties: {} },
  request: { method: 'GET', path: '/reports' },
  response: { fields: { titles: '*.title' }, text: 'Reports: {titles}' },
};

describe('broker tools list', () => {
  it('lists every tool start-up serves with its provider, scopes and source; in development the embedded tools file', async () => {
    const run = await tools(['list']);
    expect(run.code).toBe(0);
    const rows = run.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(/\s{2,}/));
    expect(rows[0]).toEqual(['name', 'provider', 'scopes', 'source']);
    expect(rows).toEqual(
      expect.arrayContaining([
        ['github_create_issue', 'github', 'repo', 'built in'],
        ['notes_delete', '-', '-', 'built in'],
        ['github_get_issue', 'github', 'repo', 'file'],
        ['github_comment_issue', 'github', 'repo', 'file'],
      ]),
    );
    expect(run.output).toMatch(/TOOLS_FILE is not set, so npm start serves the tools of .*config\/dev-tools\.yaml/);
  });

  it("lists a TOOLS_FILE's tools and a module's as JSON", async () => {
    const file = await toolsFile('tools.yaml', [countReports]);
    const run = await tools(['list', '--json'], {
      TOOLS_FILE: file,
      TOOL_MODULES: 'test/support/toolModules/reportsCount.ts',
    });
    expect(run.code).toBe(0);
    const rows = JSON.parse(run.stdout) as { name: string; source: string }[];
    expect(rows.filter((r) => r.source !== 'built in')).toEqual([
      { name: 'reports_count', provider: 'reports', scopes: ['reports:read'], source: 'module' },
      { name: 'reports_count_declared', provider: 'reports', scopes: ['reports:read'], source: 'file' },
    ]);
    // TOOLS_FILE replaces the development default.
    expect(rows.map((r) => r.name)).not.toContain('github_get_issue');
  });
});

describe('broker tools with starter tools', () => {
  it('lists a starter a TOOLS_FILE enables with its source, bound to the development GitHub-like provider', async () => {
    const file = await toolsFile('starters.yaml', [
      { starter: 'github_list_repos' },
      { starter: 'github_get_issue', name: 'gh_read_issue' },
      countReports,
    ]);
    const run = await tools(['list', '--json'], { TOOLS_FILE: file });
    expect(run.code).toBe(0);
    const rows = JSON.parse(run.stdout) as { name: string; source: string }[];
    expect(rows.filter((r) => r.source !== 'built in')).toEqual([
      { name: 'github_list_repos', provider: 'github', scopes: ['repo'], source: 'starter' },
      { name: 'gh_read_issue', provider: 'github', scopes: ['repo'], source: 'starter' },
      { name: 'reports_count_declared', provider: 'reports', scopes: ['reports:read'], source: 'file' },
    ]);
    const table = await tools(['list'], { TOOLS_FILE: file });
    expect(table.stdout.split('\n').map((line) => line.split(/\s{2,}/))).toContainEqual([
      'github_list_repos',
      'github',
      'repo',
      'starter',
    ]);
  });

  it("check binds a starter to an operator's provider of that catalog entry, and exits 1 naming the starters it cannot serve", async () => {
    const providers = join(dir, 'providers-starters.yaml');
    await writeFile(
      providers,
      stringify([
        {
          id: 'slack-work',
          catalog: 'slack',
          clientId: '2141029472.1',
          clientSecret: 'secret',
          scopes: ['search:read'],
        },
      ]),
    );
    const ok = await tools(['check'], {
      TOOLS_FILE: await toolsFile('slack.yaml', [{ starter: 'slack_search_messages' }]),
      PROVIDERS_FILE: providers,
    });
    expect(ok.stdout).toBe(`ok: ${join(dir, 'slack.yaml')} declares 1 tool(s): slack_search_messages\n`);
    const file = await toolsFile('bad-starters.yaml', [
      { starter: 'slack_search' },
      { starter: 'jira_search_issues' },
      { starter: 'slack_post_message' },
    ]);
    const run = await tools(['check'], { TOOLS_FILE: file, PROVIDERS_FILE: providers });
    expect(run.code).toBe(1);
    expect(run.output).toContain(`broker: TOOLS_FILE ${file} declares tools that cannot be served:
  - [0] (slack_search) starter: "slack_search" is not a starter tool (starters: `);
    expect(run.output).toContain(`
  - [1] (jira_search_issues) starter: jira_search_issues is written for the atlassian catalog entry, and no configured provider is built from it (add a PROVIDERS_FILE entry with catalog: atlassian)
  - [2] (slack_post_message) scopes: slack_post_message needs the scopes chat:write of slack-work, which its provider entry does not ask for
`);
  });
});

describe('broker tools check', () => {
  it('says ok for a valid file', async () => {
    const run = await tools(['check'], { TOOLS_FILE: await toolsFile('ok.yaml', [countReports]) });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`ok: ${join(dir, 'ok.yaml')} declares 1 tool(s): reports_count_declared\n`);
  });

  it('exits 1 listing every problem: an unknown provider, scopes the provider entry does not ask for, a name taken by a module', async () => {
    const file = await toolsFile('bad.yaml', [
      { ...countReports, provider: 'jira' },
      { ...countReports, name: 'wide', scopes: ['reports:admin'] },
      { ...countReports, name: 'reports_count' },
    ]);
    const run = await tools(['check'], { TOOLS_FILE: file, TOOL_MODULES: 'test/support/toolModules/reportsCount.ts' });
    expect(run.code).toBe(1);
    expect(run.output).toContain(`broker: TOOLS_FILE ${file} declares tools that cannot be served:
  - [0] (reports_count_declared) provider: "jira" is not a configured provider (configured: reports, github)
  - [1] (wide) scopes: wide needs the scopes reports:admin of reports, which its provider entry does not ask for
  - [2] (reports_count) name: reports_count is already a TOOL_MODULES tool
`);
  });

  it("checks against an operator's own provider entry that replaces a development one", async () => {
    const providers = join(dir, 'providers.yaml');
    await writeFile(
      providers,
      stringify([
        { id: 'github', catalog: 'github', clientId: 'Iv1.abc', clientSecret: 'secret', scopes: ['read:user'] },
      ]),
    );
    const file = await toolsFile('github.yaml', [
      { ...countReports, name: 'gh_read', provider: 'github', scopes: ['repo'] },
    ]);
    const run = await tools(['check'], { TOOLS_FILE: file, PROVIDERS_FILE: providers });
    expect(run.code).toBe(1);
    expect(run.output).toContain(
      '[0] (gh_read) scopes: gh_read needs the scopes repo of github, which its provider entry does not ask for',
    );
  });
});
