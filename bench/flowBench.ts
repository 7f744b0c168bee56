import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fetchDevToken } from '../src/cli/devToken.js';
import { DEV_PASSWORD, devUsers } from '../src/dev/devUsers.js';
import { runFlow, type FlowContext, type FlowResult } from './flowDriver.js';
import { readFlowEnv } from './flowEnv.js';
import { LOOP_RESOLUTION_MS, loopDelayOf } from './flowIpc.js';
import { createUserGates } from './flowGate.js';
import { formatRun } from './flowReport.js';
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
    const tokens = new Map<string, string>();
    for (const login of users) {
      tokens.set(login, await fetchDevToken({ issuer: stack.dev.idp.issuer, resource: `${stack.brokerUrl}/mcp`, login, password: DEV_PASSWORD, fetch: stack.fetch }));
    }
    const ctx: FlowContext = {
      brokerUrl: stack.brokerUrl,
      reportsIssuer: stack.dev.reports.issuer,
      fetch: stack.fetch,
      tokens,
      gates: createUserGates(),
      forget: async (login) => void (await stack.pool.query('DELETE FROM secrets WHERE subject_iss = $1 AND subject_sub = $2', [stack.dev.idp.issuer, login])),
    };
    const prefix = `flow-bench ${randomBytes(3).toString('hex')} #`;

    process.stdout.write(`flow bench: ${env.flows} flows, ${env.concurrency} at a time…\n`);
    await stack.broker.openWindow();
    const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    loop.enable();
    const results: FlowResult[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: env.concurrency }, async () => {
        for (let index = next++; index < env.flows; index = next++) {
          results[index] = await runFlow(ctx, index, users[index % users.length]!, `${prefix}${index}`);
        }
      }),
    );
    const wallMs = performance.now() - started;
    const broker = await stack.broker.stats();
    loop.disable();
    const benchLoopDelay = loopDelayOf(loop);

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
