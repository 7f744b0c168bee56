import { fileURLToPath } from 'node:url';
import { DEV_PROVIDER_SCOPES } from '../src/mcp/declared/devDefaults.js';
import { loadToolsFile } from '../src/mcp/declared/toolsFile.js';
import { tools as builtInTools } from '../src/mcp/tools/registry.js';
import { GITHUB_FORMS, consentAndAuthorize, openConnectLink } from '../test/support/connectFlow.js';
import { githubIssueCoded } from './benchIssueTool.js';
import { callTool } from './flowMcp.js';
import { runLoad, type LoadJob, type LoadResult } from './load.js';
import type { BenchStack } from './stack.js';
import { BENCH_ISSUE, DECLARED_CASES } from './wire.js';

// bench:mcp's declared-tool comparison: a read declared in bench/mcpBenchTools.yaml
// beside the same call written with defineConnectionTool (bench/benchIssueTool.ts),
// on one broker, through one connection of alice's to the GitHub-like provider.

const TOOLS_FILE = fileURLToPath(new URL('./mcpBenchTools.yaml', import.meta.url));
const [CODED, DECLARED] = DECLARED_CASES;

export interface DeclaredRuns {
  coded: LoadResult[];
  declared: LoadResult[];
}

/**
 * Serves both tools (the file checked as start-up checks a TOOLS_FILE), connects
 * alice to the GitHub-like provider through the declared tool's connect link,
 * as a host and a browser do, and opens the issue both tools read.
 */
export async function prepareDeclaredTools(stack: BenchStack, token: string): Promise<void> {
  const taken = [...builtInTools, githubIssueCoded].map((t) => ({ name: t.name, source: 'built-in' }));
  const declared = await loadToolsFile(TOOLS_FILE, {
    providers: [{ id: 'github', scopes: DEV_PROVIDER_SCOPES.github }],
    taken,
  });
  await stack.serveGithubTools([githubIssueCoded, ...declared]);

  const target = { brokerUrl: stack.brokerUrl, fetch: stack.fetch };
  const asked = (await callTool(
    target,
    token,
    'github_issue_declared',
    BENCH_ISSUE,
    {},
    { elicitation: { url: {} } },
  )) as { inputRequests?: { connect?: { params?: { url?: string } } } };
  const link = asked.inputRequests?.connect?.params?.url;
  if (!link)
    throw new Error(`github_issue_declared did not ask alice to connect: ${JSON.stringify(asked).slice(0, 300)}`);
  const done = await consentAndAuthorize(
    target,
    await openConnectLink(target, link, 'alice'),
    'alice',
    'Allow',
    GITHUB_FORMS,
  );
  if (!done.text.includes('is connected'))
    throw new Error(`connecting alice to the GitHub-like provider ended at ${done.url} (HTTP ${done.status})`);
  const created = (await callTool(
    target,
    token,
    'github_create_issue',
    { repository: `${BENCH_ISSUE.owner}/${BENCH_ISSUE.repo}`, title: 'bench:mcp reads this issue' },
    {},
    {},
  )) as { structuredContent?: { issue?: { number?: number } } };
  if (created.structuredContent?.issue?.number !== BENCH_ISSUE.number)
    throw new Error(
      `expected issue #${BENCH_ISSUE.number} in alice/demo, got ${JSON.stringify(created).slice(0, 300)}`,
    );
}

/** The windows' order (ABBA BAAB): a machine that gets busier or quieter during the run weighs on both alike. */
export const WINDOW_ORDER = [CODED, DECLARED, DECLARED, CODED, DECLARED, CODED, CODED, DECLARED] as const;

/**
 * Each tool once unmeasured (its first calls open connections and warm the
 * code), then the windows of WINDOW_ORDER.
 */
export async function measureDeclaredTools(
  job: Omit<LoadJob, 'caseName'>,
  progress: (line: string) => void,
): Promise<DeclaredRuns> {
  for (const caseName of DECLARED_CASES) await runLoad({ ...job, caseName, durationMs: job.warmupMs });
  const runs: DeclaredRuns = { coded: [], declared: [] };
  for (const caseName of WINDOW_ORDER) {
    const result = await runLoad({ ...job, caseName });
    progress(`${caseName}: ${result.requestsPerSecond.toFixed(0)} calls/s`);
    (caseName === CODED ? runs.coded : runs.declared).push(result);
  }
  return runs;
}
