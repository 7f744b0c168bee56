import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROACTIVE_REFRESH, type ProactiveRefreshResult } from '../src/jobs/proactiveRefresh.js';
import { callTool } from './flowMcp.js';
import type { RefreshStack } from './refreshStack.js';

/** One tool call: who made it on which instance, when it left and came back (performance.now()), and why it failed. */
export interface CallSample {
  login: string;
  instance: number;
  start: number;
  end: number;
  failure: string | undefined;
}

/** One instance's proactive refresh loop, its runs' results summed. */
export interface JobTally extends ProactiveRefreshResult {
  runs: number;
  /** Runs that threw (a query failed): the loop logs them and goes on. */
  thrown: number;
}

export interface StormRun {
  /** When the calls and the refresh loops started (performance.now()): the moment every access token expired. */
  startedAt: number;
  /** How late after that moment the storm started (the seeding ran past it), in ms. */
  lateMs: number;
  calls: CallSample[];
  jobs: JobTally[];
  /** Whether every seeded connection was renewed before the loops had to stop. */
  allRenewed: boolean;
}

export interface StormPlan {
  /** An MCP access token per calling user. */
  tokens: ReadonlyMap<string, string>;
  callersPerUser: number;
  seconds: number;
  connections: number;
  /** The moment the seeded access tokens expire; the storm starts then. */
  expiresAt: Date;
}

const TOOL = 'refresh_bench_whoami';
// A loop whose run found nothing due waits this long before looking again.
const IDLE_MS = 200;
// After the calls, the loops go on until every connection is renewed, for at most this long.
const DRAIN_LIMIT_MS = 60_000;

/**
 * At the moment the seeded tokens expire: every instance runs the proactive refresh back to back
 * (PROACTIVE_REFRESH's horizon, batch and concurrency), while each calling user's callers call the
 * bench tool in closed loops, alternating between the instances, for `seconds`. The loops stop once
 * every connection has been renewed and the calls are over.
 */
export async function runStorm(stack: RefreshStack, plan: StormPlan): Promise<StormRun> {
  const wait = plan.expiresAt.getTime() - Date.now();
  if (wait > 0) await sleep(wait);
  const lateMs = Math.max(0, -wait);
  const startedAt = performance.now();
  const callsEnd = startedAt + plan.seconds * 1000;
  const renewed = () => new Set(stack.provider.served.map((s) => s.subject)).size >= plan.connections;
  let stop = false;

  const jobs = stack.instances.map(() => ({ runs: 0, thrown: 0, refreshed: 0, skipped: 0, needsReauth: 0, failed: 0 }));
  const loops = stack.instances.map(async ({ server }, i) => {
    const tally = jobs[i]!;
    while (!stop) {
      try {
        const result = await server.refreshExpiring(PROACTIVE_REFRESH);
        tally.runs++;
        tally.refreshed += result.refreshed;
        tally.skipped += result.skipped;
        tally.needsReauth += result.needsReauth;
        tally.failed += result.failed;
        if (result.refreshed + result.skipped + result.needsReauth + result.failed === 0) await sleep(IDLE_MS);
      } catch (err) {
        tally.thrown++;
        process.stderr.write(`refresh bench: broker ${i + 1}'s refreshExpiring threw: ${String(err)}\n`);
        await sleep(IDLE_MS);
      }
    }
  });

  const calls: CallSample[] = [];
  const caller = async (login: string, token: string, first: number) => {
    for (let n = first; performance.now() < callsEnd; n++) {
      const instance = n % stack.instances.length;
      const start = performance.now();
      let failure: string | undefined;
      try {
        const target = { fetch: stack.fetch, brokerUrl: stack.instances[instance]!.url };
        const result = await callTool(target, token, TOOL, {}, {}, {});
        const account = (result['structuredContent'] as { account?: unknown } | undefined)?.account;
        if (result['resultType'] !== 'complete' || result['isError'] === true || account !== login)
          failure = `unexpected result: ${JSON.stringify(result).slice(0, 300)}`;
      } catch (err) {
        failure = err instanceof Error ? err.message : String(err);
      }
      calls.push({ login, instance, start, end: performance.now(), failure });
    }
  };
  const callers = [...plan.tokens].flatMap(([login, token]) =>
    Array.from({ length: plan.callersPerUser }, (_, k) => caller(login, token, k)),
  );

  await Promise.all(callers);
  const drainUntil = performance.now() + DRAIN_LIMIT_MS;
  while (!renewed() && performance.now() < drainUntil) await sleep(50);
  stop = true;
  await Promise.all(loops);
  return { startedAt, lateMs, calls, jobs, allRenewed: renewed() };
}
