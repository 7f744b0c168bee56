import { randomBytes } from 'node:crypto';
import { devUsers } from '../src/dev/devUsers.js';
import { BROKER_FORMS, compiledBrokerDir, type BrokerForm } from './brokerModules.js';
import { assertFlowsWithinQuota, readFlowEnv, type FlowEnv } from './flowEnv.js';
import { formatFlowFormComparison } from './flowForms.js';
import { formatRun, formatSideBySide, type FlowRun } from './flowReport.js';
import { fetchTokens, runFlows } from './flowRun.js';
import { githubService, reportService, type FlowService } from './flowServices.js';
import { startFlowStack, type FlowStack } from './flowStack.js';
import { verifyFlows } from './flowVerify.js';
import { DEFAULT_QUOTAS } from '../src/config/limits.js';

// npm run bench:flow — N complete connect flows (BENCH_FLOWS, default 100),
// BENCH_CONCURRENCY (default 20) at a time, over HTTPS with a cookie jar per
// flow, against the development identity provider and each development
// provider in turn, each on a fresh stack: the Report Service, each flow
// ending in an accepted reports_create, then the GitHub-like provider, each
// ending in an accepted github_create_issue in <login>/demo; then both side by side.
// Each service runs twice: on the broker process from src/ through tsx (npm start) and on
// the compiled build (dist/, built first: bench/brokerModules.ts); a table of the two and
// a verdict close the run (per side 100 flows, 200 before the compiled runs were added, so
// a run stays about as long). Exits 1 unless every flow of every run did its operation
// exactly once; a slower compiled build is reported, not failed.

const DEFAULTS = { flows: 100, concurrency: 20 };

async function main(): Promise<boolean> {
  // The bench reads its own variables (bench/flowEnv.ts), as test/ does.
  const env = readFlowEnv(process.env, DEFAULTS);
  const compiledDir = await compiledBrokerDir(process.env, (line) => process.stdout.write(`flow bench: ${line}\n`));
  const users = devUsers.map((u) => u.login);
  assertFlowsWithinQuota(env.flows, users.length, DEFAULT_QUOTAS.navigationsPerHour);
  const pairs: Record<BrokerForm, FlowRun>[] = [];
  // A fresh stack per service and form: the same broker, database and quotas for each, and each user's
  // flows of one run stay within the default quota of flows an hour (src/broker/quotas.ts).
  // The form that runs first alternates, so a machine getting busier or quieter weighs on both alike.
  for (const [i, serviceOf] of [reportService, githubService].entries()) {
    const pair = {} as Record<BrokerForm, FlowRun>;
    for (const form of i % 2 === 0 ? BROKER_FORMS : [...BROKER_FORMS].reverse())
      pair[form] = await runOnce(env, users, serviceOf, { form, compiledDir });
    pairs.push(pair);
  }
  process.stdout.write(formatSideBySide(pairs.map((p) => p.tsx)));
  process.stdout.write(formatFlowFormComparison(pairs));
  const ok = pairs.every((p) => p.tsx.verification.ok && p.compiled.verification.ok);
  process.stdout.write(
    ok ? '\nOK: every flow of every run did its operation exactly once\n' : '\nFAILED: see the run reports above\n',
  );
  return ok;
}

async function runOnce(
  env: FlowEnv,
  users: readonly string[],
  serviceOf: (stack: FlowStack) => FlowService,
  broker: { form: BrokerForm; compiledDir?: string },
): Promise<FlowRun> {
  process.stdout.write(
    `flow bench: starting Postgres, the development servers and the broker process (${broker.form})…\n`,
  );
  const stack = await startFlowStack(env, broker);
  const interrupted = () => {
    process.stderr.write('flow bench: interrupted; cleaning up\n');
    void stack.close().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  try {
    const service = serviceOf(stack);
    const tokens = await fetchTokens(stack, users);
    const prefix = `flow-bench ${randomBytes(3).toString('hex')} #`;
    process.stdout.write(
      `flow bench: ${service.name} (${service.tool}): ${env.flows} flows, ${env.concurrency} at a time…\n`,
    );
    const { results, wallMs, broker, benchLoopDelay } = await runFlows(stack, tokens, {
      service,
      flows: env.flows,
      concurrency: env.concurrency,
      users,
      prefix,
    });
    const verification = await verifyFlows({ pool: stack.pool, service, tokens }, results, prefix);
    const run: FlowRun = {
      service,
      flows: env.flows,
      concurrency: env.concurrency,
      users,
      wallMs,
      results,
      broker,
      brokerPid: stack.broker.pid,
      form: stack.form,
      poolMax: stack.poolMax,
      database: stack.database,
      verification,
      devErrors: stack.devErrors,
      benchLoopDelay,
    };
    process.stdout.write(formatRun(run));
    return run;
  } finally {
    process.off('SIGINT', interrupted);
    await stack.close();
  }
}

main().then(
  // Everything was closed above; an idle keep-alive socket must not hold the exit back.
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    process.stderr.write(`flow bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
