import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import type { Pool } from '../src/db/pool.js';
import { devUsers } from '../src/dev/devUsers.js';
import { assertFlowsWithinQuota, positiveInt, readFlowEnv, type FlowEnv } from './flowEnv.js';
import { callTool } from './flowMcp.js';
import { formatRun } from './flowReport.js';
import { fetchTokens, runFlows } from './flowRun.js';
import { reportService } from './flowServices.js';
import { startFlowStack } from './flowStack.js';
import { verifyFlows } from './flowVerify.js';
import { prepareLooper, type Looper } from './loopCaller.js';
import { formatLooper, formatLoopTable, type LoopRun } from './loopReport.js';
import { DEFAULT_QUOTAS, type Quotas } from '../src/config/limits.js';

// npm run bench:loop — the normal flow workload of bench:flow (BENCH_FLOWS,
// default 100; BENCH_CONCURRENCY, default 10) three times, each on a fresh
// stack: alone; beside one principal looping (BENCH_LOOP_TOOL loops calling
// reports_create with fresh arguments, BENCH_LOOP_LINK loops opening another
// user's connect link) with quotas off; and the same looper under the default
// quotas. Every ledger row takes the one chain lock (migrations/0004_ledger_chain.sql),
// so the looper's rows queue with the normal flows'. Exits 1 unless every
// normal flow of every run created its report exactly once.

const LOOPER = 'mallory';
const VICTIM = 'alice';
/** Quotas off: nothing a run of this length can reach. */
const UNLIMITED: Quotas = {
  navigationsPerHour: 1e9,
  openPerProvider: 1e9,
  waitsPerPrincipal: 1e9,
  refusalsPerFlow: 1e9,
};

interface Plan {
  name: string;
  looper: boolean;
  quotas: Quotas;
}

const PLANS: readonly Plan[] = [
  { name: 'baseline (no looper)', looper: false, quotas: DEFAULT_QUOTAS },
  { name: 'looper, quotas off', looper: true, quotas: UNLIMITED },
  { name: 'looper, default quotas', looper: true, quotas: DEFAULT_QUOTAS },
];

interface LoopEnv extends FlowEnv {
  toolLoops: number;
  linkLoops: number;
}

async function main(): Promise<boolean> {
  const env: LoopEnv = {
    ...readFlowEnv(process.env, { flows: 100, concurrency: 10 }),
    toolLoops: positiveInt(process.env, 'BENCH_LOOP_TOOL', 4, 100),
    linkLoops: positiveInt(process.env, 'BENCH_LOOP_LINK', 2, 100),
  };
  const users = devUsers.map((u) => u.login).filter((login) => login !== LOOPER);
  // Each run's normal users must stay inside the default quotas themselves (one more flow: the victim's link).
  assertFlowsWithinQuota(env.flows, users.length, DEFAULT_QUOTAS.navigationsPerHour, 1);
  process.stdout.write(
    `loop bench: ${env.flows} flows as ${users.join(', ')}, ${env.concurrency} at a time, three runs; looper ${LOOPER} with ${env.toolLoops} tool loops and ${env.linkLoops} link loops; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} on this machine\n`,
  );
  const runs: LoopRun[] = [];
  for (const plan of PLANS) {
    const run = await runOnce(env, users, plan);
    runs.push(run);
    process.stdout.write(`${formatLooper(run)}\n`);
  }
  process.stdout.write(`\n${formatLoopTable(runs)}\n\n`);
  const ok = runs.every((r) => r.verification.ok);
  process.stdout.write(
    ok ? 'OK: every normal flow of every run created its report exactly once\n' : 'FAILED: see the run reports above\n',
  );
  return ok;
}

async function runOnce(env: LoopEnv, users: readonly string[], plan: Plan): Promise<LoopRun> {
  process.stdout.write(`loop bench: ${plan.name}: starting a fresh stack…\n`);
  const stack = await startFlowStack(env, { quotas: plan.quotas });
  const interrupted = () => {
    process.stderr.write('loop bench: interrupted; cleaning up\n');
    void stack.close().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  try {
    const tokens = await fetchTokens(stack, [...users, LOOPER]);
    const normal = new Map(users.map((u) => [u, tokens.get(u)!]));
    const target = { brokerUrl: stack.brokerUrl, fetch: stack.fetch };
    let looper: Looper | undefined;
    if (plan.looper) {
      const victim = await callTool(
        target,
        tokens.get(VICTIM)!,
        'reports_create',
        { title: 'loop bench: the victim link', body: '' },
        {},
        { elicitation: { url: {} } },
      );
      const victimLink = (victim['inputRequests'] as { connect?: { params?: { url?: string } } } | undefined)?.connect
        ?.params?.url;
      if (!victimLink) throw new Error(`no connect link for ${VICTIM}: ${JSON.stringify(victim).slice(0, 300)}`);
      looper = await prepareLooper(target, {
        login: LOOPER,
        token: tokens.get(LOOPER)!,
        toolLoops: env.toolLoops,
        linkLoops: env.linkLoops,
        victimLink,
      });
    }
    const before = await ledgerCounts(stack.pool, LOOPER);
    const prefix = `loop-bench ${randomBytes(3).toString('hex')} #`;
    const service = reportService(stack);
    const flows = await runFlows(stack, normal, {
      service,
      flows: env.flows,
      concurrency: env.concurrency,
      users,
      prefix,
      onStart: () => looper?.start(),
    });
    const looperStats = await looper?.stop();
    const after = await ledgerCounts(stack.pool, LOOPER);
    const verification = await verifyFlows({ pool: stack.pool, service, tokens: normal }, flows.results, prefix);
    if (!verification.ok) {
      process.stdout.write(
        formatRun({
          service,
          flows: env.flows,
          concurrency: env.concurrency,
          users,
          ...flows,
          brokerPid: stack.broker.pid,
          poolMax: stack.poolMax,
          database: stack.database,
          verification,
          devErrors: stack.devErrors,
        }),
      );
    }
    return {
      name: plan.name,
      flows,
      verification,
      looper: looperStats,
      looperRows: {
        flows: after.flowRows - before.flowRows,
        navigations: after.navigations - before.navigations,
        refusals: after.refusals - before.refusals,
      },
      allRows: after.all - before.all,
      load: loadavg()[0]!,
    };
  } finally {
    process.off('SIGINT', interrupted);
    await stack.close();
  }
}

/** Ledger rows so far: all, those of the looper's own flows, and refusals of its browser on others' flows. */
async function ledgerCounts(
  pool: Pool,
  login: string,
): Promise<{ all: number; flowRows: number; navigations: number; refusals: number }> {
  const { rows } = await pool.query<{ all: number; flow_rows: number; navigations: number; refusals: number }>(
    `SELECT (SELECT count(*) FROM navigation_events)::int AS all,
            (SELECT count(*) FROM navigation_events e JOIN elicitation_navigations n ON n.id = e.navigation_id WHERE n.subject_sub = $1)::int AS flow_rows,
            (SELECT count(*) FROM elicitation_navigations WHERE subject_sub = $1)::int AS navigations,
            (SELECT count(*) FROM navigation_events e JOIN elicitation_navigations n ON n.id = e.navigation_id WHERE e.actor = $2 AND n.subject_sub <> $1)::int AS refusals`,
    [login, `browser:${login}`],
  );
  const r = rows[0]!;
  return { all: r.all, flowRows: r.flow_rows, navigations: r.navigations, refusals: r.refusals };
}

main().then(
  // Everything was closed above; an idle keep-alive socket must not hold the exit back.
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    process.stderr.write(`loop bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
