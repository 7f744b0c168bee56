import { decodeJwt } from 'jose';
import { consentAndAuthorize, openConnectLink } from '../test/support/connectFlow.js';
import { BROKER_FORMS, type BrokerForm } from './brokerModules.js';
import { measureBothForms } from './formWindows.js';
import { callTool } from './flowMcp.js';
import { runLoad, type LoadJob, type LoadResult } from './load.js';
import { sampleCheck } from './sampleCheck.js';
import type { BenchStack } from './stack.js';
import { BENCH_MEMO, UPSTREAM_CASES } from './wire.js';

// bench:mcp's upstream comparison: the development upstream MCP server's read-only list,
// proxied by the broker (memo_list: the broker checks alice's MCP token, reads her upstream
// token from the vault and calls memo with it) beside the same call sent to memo directly with
// that upstream token. The proxied rows run on the tsx broker and on the compiled one.

const [PROXIED, DIRECT] = UPSTREAM_CASES;

export interface UpstreamRuns {
  /** At the bench's connections (16), each row's throughput. */
  proxied: LoadResult;
  direct: LoadResult;
  /** At one connection: what the broker adds to one call's latency when nothing waits in a queue. */
  proxiedAlone: LoadResult;
  directAlone: LoadResult;
}

/**
 * Serves memo as an upstream, connects alice to it through memo_save's connect link as a host and
 * a browser do, saves the memo both cases list, and returns her upstream token for the direct calls.
 */
export async function prepareUpstream(stack: BenchStack, token: string): Promise<string> {
  await stack.serveUpstream();
  const target = { brokerUrl: stack.brokerUrl, fetch: stack.fetch };
  const args = { text: BENCH_MEMO };
  const asked = (await callTool(target, token, 'memo_save', args, {}, { elicitation: { url: {} } })) as {
    inputRequests?: { connect?: { params?: { url?: string } } };
  };
  const link = asked.inputRequests?.connect?.params?.url;
  if (!link) throw new Error(`memo_save did not ask alice to connect: ${JSON.stringify(asked).slice(0, 300)}`);
  const done = await consentAndAuthorize(target, await openConnectLink(target, link, 'alice'), 'alice');
  if (!done.text.includes('is connected'))
    throw new Error(`connecting alice to memo ended at ${done.url} (HTTP ${done.status})`);
  const saved = (await callTool(target, token, 'memo_save', args, {}, {})) as { isError?: boolean };
  if (saved.isError) throw new Error(`memo_save failed: ${JSON.stringify(saved).slice(0, 300)}`);
  // The MCP principal is the token's issuer and subject, as the broker reads them.
  const { iss, sub } = decodeJwt(token);
  const upstreamToken = await stack.upstreamToken({ iss: String(iss), sub: String(sub) });
  if (!upstreamToken) throw new Error('no upstream token stored for alice at memo');
  return upstreamToken;
}

/** The sample requests of either case that failed on either broker form (none: both answer with the bench memo). */
export async function checkUpstream(stack: BenchStack, token: string, upstreamToken: string): Promise<string[]> {
  const proxied: string[] = [];
  for (const form of BROKER_FORMS) {
    stack.use(form);
    const check = await sampleCheck(stack.fetch, [{ name: `broker (${form})`, url: stack.brokerMcpUrl }], token, [
      PROXIED,
    ]);
    proxied.push(...check.failures);
  }
  stack.use('tsx');
  const direct = await sampleCheck(stack.fetch, [{ name: 'upstream', url: stack.upstreamMcpUrl }], upstreamToken, [
    DIRECT,
  ]);
  return [...proxied, ...direct.failures];
}

/**
 * The direct window, then the proxied ones on each broker form (bench/formWindows.ts), with the
 * same connections, warm-up and duration; then the same at one connection. memo's process's
 * CPU is counted over each window beside this one's. Both forms' runs share the direct windows;
 * the tsx broker serves again at the end.
 */
export async function measureUpstream(
  stack: BenchStack,
  job: Omit<LoadJob, 'url' | 'caseName' | 'token'>,
  tokens: { mcp: string; upstream: string },
  progress: (line: string) => void,
): Promise<Record<BrokerForm, UpstreamRuns>> {
  const pair = async (connections: number) => {
    const at = { ...job, connections };
    const direct = await runLoad(
      { ...at, url: stack.upstreamMcpUrl, caseName: DIRECT, token: tokens.upstream },
      stack.upstreamCpuUsage,
    );
    progress(`${DIRECT} on memo directly, ${connections} connection(s): ${direct.requestsPerSecond.toFixed(0)} req/s`);
    const proxied = await measureBothForms(stack.use, async (form) => {
      const result = await runLoad(
        { ...at, url: stack.brokerMcpUrl, caseName: PROXIED, token: tokens.mcp },
        stack.upstreamCpuUsage,
      );
      progress(
        `${PROXIED} through the broker (${form}), ${connections} connection(s): ${result.requestsPerSecond.toFixed(0)} req/s`,
      );
      return result;
    });
    return { direct, proxied };
  };
  const loaded = await pair(job.connections);
  const alone = await pair(1);
  const runsOf = (form: BrokerForm): UpstreamRuns => ({
    direct: loaded.direct,
    proxied: loaded.proxied[form],
    directAlone: alone.direct,
    proxiedAlone: alone.proxied[form],
  });
  return { tsx: runsOf('tsx'), compiled: runsOf('compiled') };
}
