import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchDevToken } from '../src/cli/devToken.js';
import { startEmbeddedPostgres } from '../src/db/embeddedPostgres.js';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { loadOrCreateDevSecrets } from '../src/dev/devSecrets.js';
import { startLocalDevStack } from '../src/dev/devStack.js';
import { DEV_PASSWORD, devUsers } from '../src/dev/devUsers.js';
import { createFetch } from '../src/shared/httpClient.js';
import { createLogger } from '../src/shared/logger.js';
import { loadOrCreateLocalTls } from '../src/tls/localCa.js';
import { createRender } from '../src/web/render.js';
import { freePorts } from '../test/support/brokerProcess.js';
import { startBrokerInstances, stopBrokerInstances, type BrokerInstance } from '../test/support/brokerInstances.js';
import { HAPROXY_BINARY, startHaproxy, waitForServers } from '../test/support/haproxy.js';
import { positiveInt, readFlowEnv } from './flowEnv.js';
import { callbackPercentiles, percentiles } from './flowReport.js';
import { driveFlows } from './flowRun.js';
import { createUserGates } from './flowGate.js';
import { githubService } from './flowServices.js';
import { verifyFlows } from './flowVerify.js';
import { runLoad } from './load.js';
import { formatColumns } from './report.js';

// npm run bench:scale — tools/call and complete connect flows through HAProxy running
// deploy/haproxy.cfg, in front of 1, 2 and then 3 broker processes (src/main.ts, as
// test/scale/balancer.int.test.ts starts them) on one Postgres (embedded, or DATABASE_URL):
// BENCH_SECONDS (default 8) of tools/call notes_list on BENCH_CONNECTIONS (default 16) from a
// separate process, then BENCH_FLOWS (default 60) connect flows, BENCH_CONCURRENCY (default 12) at a
// time, at the GitHub-like provider, for each count. A count below three points the balancer's
// unused server lines at a closed port, which its health checks take out of the rotation. On two
// cores every instance shares the same CPU: the point is the cost of going through the balancer
// and several processes, and that each flow still happens once, not a speed-up.
// Exits 1 unless every flow of every count did its operation exactly once.

interface Row {
  instances: number;
  calls: { rps: number; p50: number; p99: number; errors: number };
  flows: { perSecond: number; callbackP50: number; callbackP99: number; flowP99: number; ok: boolean; note: string };
}

async function main(): Promise<boolean> {
  if (!HAPROXY_BINARY) throw new Error('bench:scale needs haproxy (apt-get install haproxy)');
  const flowEnv = readFlowEnv(process.env, { flows: 60, concurrency: 12 });
  const seconds = positiveInt(process.env, 'BENCH_SECONDS', 8, 600);
  const connections = positiveInt(process.env, 'BENCH_CONNECTIONS', 16, 1_000);
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const dir = await mkdtemp(join(tmpdir(), 'scale-bench-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    await chmod(dir, 0o711); // as root, Postgres runs as `postgres` and must traverse this folder
    const logger = createLogger({ level: 'error', name: 'scale-bench' });
    const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
    const secrets = await loadOrCreateDevSecrets(dir);
    let url = flowEnv.databaseUrl;
    if (!url) {
      const embedded = await startEmbeddedPostgres(join(dir, 'postgres'), logger);
      closers.push(embedded.stop);
      url = embedded.url;
    }
    const schema = `bench_scale_${randomBytes(5).toString('hex')}`;
    const admin = createPool({ url, poolMax: 1 }, logger);
    closers.push(() => admin.end());
    await admin.query(`CREATE SCHEMA ${schema}`);
    if (flowEnv.databaseUrl) closers.push(() => admin.query(`DROP SCHEMA ${schema} CASCADE`));
    const pool = createPool({ url, poolMax: 4, schema }, logger);
    closers.push(() => pool.end());
    await migrate(pool);

    const [balancerPort, closedPort, ...ports] = await freePorts(5);
    const balancerUrl = `https://127.0.0.1:${balancerPort}`;
    const fetch = createFetch({ extraCaPems: [tls.caPem], timeoutMs: 60_000 });
    const dev = await startLocalDevStack({
      tls,
      fetch,
      secrets,
      render: createRender({ cache: true }),
      logger,
      brokerUrl: balancerUrl,
      github: true,
    });
    closers.push(() => dev.close(0));
    process.stdout.write('scale bench: starting three broker processes…\n');
    const instances: BrokerInstance[] = await startBrokerInstances({
      dir,
      secrets,
      dev,
      balancerUrl,
      ports,
      databaseUrl: url.reveal(),
      schema,
      // Every flow of the bench signs in from 127.0.0.1.
      env: { LOGIN_RATE_BURST: '100000', LOGIN_RATE_PER_MINUTE: '100000' },
    });
    closers.push(() => stopBrokerInstances(instances));

    const users = devUsers.map((u) => u.login);
    const tokens = new Map<string, string>();
    for (const login of users)
      tokens.set(
        login,
        await fetchDevToken({
          issuer: dev.idp.issuer,
          resource: `${balancerUrl}/mcp`,
          login,
          password: DEV_PASSWORD,
          fetch,
        }),
      );
    const service = githubService({ dev, fetch });
    const rows: Row[] = [];
    for (const count of [1, 2, 3]) {
      const balancer = await startHaproxy({
        port: balancerPort!,
        instances: ports.map((p, i) => `127.0.0.1:${i < count ? p : closedPort}`),
        tls,
        dir,
      });
      try {
        await waitForServers(balancer, fetch, count);
        // The unused lines' health checks fail twice a second apart before they leave the rotation.
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        process.stdout.write(`scale bench: ${count} instance(s): tools/call notes_list for ${seconds} s…\n`);
        const calls = await runLoad({
          url: `${balancerUrl}/mcp`,
          caseName: 'tools/call notes_list',
          token: tokens.get('alice')!,
          caPem: tls.caPem,
          connections,
          warmupMs: 2_000,
          durationMs: seconds * 1_000,
        });
        process.stdout.write(`scale bench: ${count} instance(s): ${flowEnv.flows} connect flows…\n`);
        const prefix = `scale-bench ${count} ${randomBytes(3).toString('hex')} #`;
        const { results, wallMs } = await driveFlows(
          {
            brokerUrl: balancerUrl,
            service,
            fetch,
            tokens,
            gates: createUserGates(),
            forget: async (login) =>
              void (await pool.query(
                'DELETE FROM secrets WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3',
                [dev.idp.issuer, login, service.provider],
              )),
          },
          { flows: flowEnv.flows, concurrency: flowEnv.concurrency, users, prefix },
        );
        const verification = await verifyFlows({ pool, service, tokens }, results, prefix);
        const callback = callbackPercentiles({ results });
        const whole = percentiles(results.filter((r) => !r.failure).map((r) => r.totalMs));
        rows.push({
          instances: count,
          calls: { rps: calls.requestsPerSecond, p50: calls.p50Ms, p99: calls.p99Ms, errors: calls.errors },
          flows: {
            perSecond: (results.length / wallMs) * 1_000,
            callbackP50: callback.p50,
            callbackP99: callback.p99,
            flowP99: whole.p99,
            ok: verification.ok,
            note: verification.ok
              ? `${verification.completed}/${verification.flows} once`
              : `lost ${verification.lost.length}, doubled ${verification.doubled.length}; ${verification.problems.slice(0, 2).join('; ')}`,
          },
        });
      } finally {
        await balancer.stop();
      }
    }
    const f = (v: number, digits = 1) => (Number.isNaN(v) ? '—' : v.toFixed(digits));
    process.stdout.write(
      [
        '',
        `Through HAProxy (deploy/haproxy.cfg) at 1, 2 and 3 broker processes on one Postgres (${flowEnv.databaseUrl ? 'DATABASE_URL' : 'embedded'}), ${connections} connections for tools/call, ${flowEnv.flows} flows ${flowEnv.concurrency} at a time`,
        ...formatColumns(
          [
            'instances',
            'notes_list req/s',
            'p50 ms',
            'p99 ms',
            'errors',
            'flows/s',
            'callback p50 ms',
            'callback p99 ms',
            'flow p99 ms',
            'done exactly once',
          ],
          rows.map((r) => [
            String(r.instances),
            f(r.calls.rps, 0),
            f(r.calls.p50, 2),
            f(r.calls.p99, 2),
            String(r.calls.errors),
            f(r.flows.perSecond, 2),
            f(r.flows.callbackP50),
            f(r.flows.callbackP99),
            f(r.flows.flowP99),
            r.flows.note,
          ]),
        ),
        '',
      ].join('\n'),
    );
    return rows.every((r) => r.flows.ok && r.calls.errors === 0);
  } finally {
    for (const closer of closers.reverse())
      await closer().catch((err: unknown) => process.stderr.write(`scale bench: cleanup failed: ${String(err)}\n`));
  }
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    process.stderr.write(`scale bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
