import { randomBytes } from 'node:crypto';
import { devUsers } from '../src/dev/devUsers.js';
import { readFlowEnv } from './flowEnv.js';
import { formatRun } from './flowReport.js';
import { fetchTokens, runFlows } from './flowRun.js';
import { startFlowStack } from './flowStack.js';
import { verifyFlows } from './flowVerify.js';

// npm run bench:flow — N complete connect flows (BENCH_FLOWS, default 200),
// BENCH_CONCURRENCY (default 20) at a time, over HTTPS with a cookie jar per
// flow, against the development identity provider and Report Service, each
// ending in an accepted reports_create. Exits 1 unless every flow created
// its report exactly once.

async function main(): Promise<boolean> {
  // The bench reads its own variables (bench/flowEnv.ts), as test/ does.
  const env = readFlowEnv(process.env);
  const users = devUsers.map((u) => u.login);
  process.stdout.write(`flow bench: starting Postgres, the development servers and the broker process…\n`);
  const stack = await startFlowStack(env);
  process.once('SIGINT', () => {
    process.stderr.write('flow bench: interrupted; cleaning up\n');
    void stack.close().finally(() => process.exit(130));
  });
  try {
    const tokens = await fetchTokens(stack, users);
    const prefix = `flow-bench ${randomBytes(3).toString('hex')} #`;
    process.stdout.write(`flow bench: ${env.flows} flows, ${env.concurrency} at a time…\n`);
    const { results, wallMs, broker, benchLoopDelay } = await runFlows(stack, tokens, { flows: env.flows, concurrency: env.concurrency, users, prefix });

    const verification = await verifyFlows({ pool: stack.pool, fetch: stack.fetch, brokerUrl: stack.brokerUrl, tokens }, results, prefix);
    process.stdout.write(
      formatRun({
        flows: env.flows,
        concurrency: env.concurrency,
        users,
        wallMs,
        results,
        broker,
        brokerPid: stack.broker.pid,
        poolMax: stack.poolMax,
        database: stack.database,
        verification,
        devErrors: stack.devErrors,
        benchLoopDelay,
      }),
    );
    return verification.ok;
  } finally {
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
