import { fileURLToPath } from 'node:url';
import { tools as builtInTools } from '../src/mcp/tools/registry.js';
import { GITHUB_FORMS, consentAndAuthorize, openConnectLink } from '../test/support/connectFlow.js';
import { GITHUB_ISSUE_CODED, githubIssueCoded } from './benchIssueTool.js';
import { BROKER_FORMS, type BrokerForm } from './brokerModules.js';
import { callTool } from './flowMcp.js';
import { runLoad, type LoadJob, type LoadResult } from './load.js';
import type { BenchStack } from './stack.js';
import { BENCH_ISSUE, DECLARED_CASES } from './wire.js';

// bench:mcp's declared-tool comparison: a read declared in bench/mcpBenchTools.yaml
// beside the same call written with defineConnectionTool (bench/benchIssueTool.ts),
// on one broker, through one connection of alice's to the GitHub-like provider;
// each window once on the tsx broker and once on the compiled one.

const TOOLS_FILE = fileURLToPath(new URL('./mcpBenchTools.yaml', import.meta.url));
const [CODED, DECLARED] = DECLARED_CASES;

export interface DeclaredRuns {
  coded: LoadResult[];
  declared: LoadResult[];
}

/**
 * Serves both tools (the file checked as start-up checks a TOOLS_FILE), each broker
 * form its own, made and checked by that form's code; connects
 * alice to the GitHub-like provider through the declared tool's connect link,
 * as a host and a browser do, and opens the issue both tools read.
 */
export async function prepareDeclaredTools(stack: BenchStack, token: string): Promise<void> {
  const taken = [...builtInTools.map((t) => t.name), GITHUB_ISSUE_CODED].map((name) => ({ name, source: 'built-in' }));
  await stack.serveGithubTools(async ({ tool }) => [
    githubIssueCoded(tool),
    ...(await tool.loadToolsFile(TOOLS_FILE, {
      providers: [{ id: 'github', scopes: tool.DEV_PROVIDER_SCOPES.github }],
      taken,
    })),
  ]);

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
 * Each tool once unmeasured on each form (its first calls open connections and warm the
 * code), then the windows of WINDOW_ORDER, each on both forms, the form that goes first
 * alternating from one window to the next. The tsx broker serves again at the end.
 */
export async function measureDeclaredTools(
  job: Omit<LoadJob, 'caseName'>,
  use: (form: BrokerForm) => void,
  progress: (line: string) => void,
): Promise<Record<BrokerForm, DeclaredRuns>> {
  for (const form of BROKER_FORMS) {
    use(form);
    for (const caseName of DECLARED_CASES) await runLoad({ ...job, caseName, durationMs: job.warmupMs });
  }
  const runs: Record<BrokerForm, DeclaredRuns> = {
    tsx: { coded: [], declared: [] },
    compiled: { coded: [], declared: [] },
  };
  for (const [i, caseName] of WINDOW_ORDER.entries()) {
    for (const form of i % 2 === 0 ? BROKER_FORMS : [...BROKER_FORMS].reverse()) {
      use(form);
      const result = await runLoad({ ...job, caseName });
      progress(`${caseName} (${form}): ${result.requestsPerSecond.toFixed(0)} calls/s`);
      (caseName === CODED ? runs[form].coded : runs[form].declared).push(result);
    }
  }
  use('tsx');
  return runs;
}
