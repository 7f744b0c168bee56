import { decodeJwt } from 'jose';
import { consentAndAuthorize, openConnectLink } from '../test/support/connectFlow.js';
import { callTool } from './flowMcp.js';
import { runLoad, type LoadJob, type LoadResult } from './load.js';
import { sampleCheck } from './sampleCheck.js';
import type { BenchStack } from './stack.js';
import { BENCH_MEMO, UPSTREAM_CASES } from './wire.js';

// bench:mcp's upstream comparison: the development upstream MCP server's read-only list,
// proxied by the broker (memo_list: the broker checks alice's MCP token, reads her upstream
// token from the vault and calls memo with it) beside the same call sent to memo directly with
// that upstream token.

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

/** The sample requests of either case that failed (none: both answer with the bench memo). */
export async function checkUpstream(stack: BenchStack, token: string, upstreamToken: string): Promise<string[]> {
  const proxied = await sampleCheck(stack.fetch, [{ name: 'broker', url: stack.brokerMcpUrl }], token, [PROXIED]);
  const direct = await sampleCheck(stack.fetch, [{ name: 'upstream', url: stack.upstreamMcpUrl }], upstreamToken, [
    DIRECT,
  ]);
  return [...proxied.failures, ...direct.failures];
}

/**
 * The direct window, then the proxied one, with the same connections, warm-up and duration; then the
 * same two at one connection. memo's process's CPU is counted over each window beside this one's.
 */
export async function measureUpstream(
  stack: BenchStack,
  job: Omit<LoadJob, 'url' | 'caseName' | 'token'>,
  tokens: { mcp: string; upstream: string },
  progress: (line: string) => void,
): Promise<UpstreamRuns> {
  const pair = async (connections: number) => {
    const at = { ...job, connections };
    const direct = await runLoad(
      { ...at, url: stack.upstreamMcpUrl, caseName: DIRECT, token: tokens.upstream },
      stack.upstreamCpuUsage,
    );
    progress(`${DIRECT} on memo directly, ${connections} connection(s): ${direct.requestsPerSecond.toFixed(0)} req/s`);
    const proxied = await runLoad(
      { ...at, url: stack.brokerMcpUrl, caseName: PROXIED, token: tokens.mcp },
      stack.upstreamCpuUsage,
    );
    progress(
      `${PROXIED} through the broker, ${connections} connection(s): ${proxied.requestsPerSecond.toFixed(0)} req/s`,
    );
    return { direct, proxied };
  };
  const loaded = await pair(job.connections);
  const alone = await pair(1);
  return { ...loaded, proxiedAlone: alone.proxied, directAlone: alone.direct };
}
