import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { lockOverdueNavigations } from '../src/broker/navigationRepo.js';
import { sweepOnce } from '../src/jobs/sweeps.js';
import { formatTable } from '../src/cli/table.js';
import { startEmbeddedPostgres } from '../src/db/embeddedPostgres.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { evaluateGates } from '../src/ledger/gates.js';
import { findGateFigures } from '../src/ledger/ledgerQueriesRepo.js';
import { systemClock } from '../src/shared/clock.js';
import { createLogger } from '../src/shared/logger.js';
import type { Secret } from '../src/shared/secret.js';
import { readBenchEnv } from './benchEnv.js';
import { chainCase, ledgerCases, median, time, type LedgerCase, type Timing } from './ledgerCases.js';
import { describePlan, explaining, LEDGER_TABLES, type Plan } from './ledgerPlans.js';
import { seedLedger } from './ledgerSeed.js';
import { APPEND_SHAPES, measureAppends, seedAppendFlows } from './ledgerAppends.js';

// npm run bench:ledger [-- --sizes 100000,1000000 --writers 1,4,16 --only queries|appends]:
// the ledger queries and the expiry sweep over N seeded navigations, with time
// per query, time per sweep batch, and the plans (single-flow lookups must not
// scan a table); then ledger appends per second at each number of concurrent
// writers (bench/ledgerAppends.ts; BENCH_SECONDS each). Uses DATABASE_URL (in a
// schema of its own, dropped after) or an embedded Postgres in a temp folder
// (removed after). A measurement: a plan check FAIL or a broken chain after
// the appends is printed and exits 1; slow figures exit 0.

const CLI_STATEMENT_TIMEOUT_MS = 15_000; // createPool's default, which `broker ledger` runs with
const logger = createLogger({ level: 'warn', name: 'ledger-bench' }, process.stderr);

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '100000,1000000' },
      writers: { type: 'string', default: '1,4,16' },
      only: { type: 'string' },
    },
  });
  const sizes = values.sizes.split(',').map((s) => Number(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 1000 || n > 10_000_000))
    throw new Error(`--sizes takes whole numbers from 1000 to 10000000, got ${values.sizes}`);
  const writers = values.writers.split(',').map((s) => Number(s.trim()));
  if (writers.some((n) => !Number.isInteger(n) || n < 1 || n > 64))
    throw new Error(`--writers takes whole numbers from 1 to 64, got ${values.writers}`);
  if (values.only !== undefined && values.only !== 'queries' && values.only !== 'appends')
    throw new Error(`--only takes queries or appends, got ${values.only}`);
  const env = readBenchEnv(process.env);
  const dir = env.databaseUrl ? undefined : await mkdtemp(join(tmpdir(), 'ledger-bench-'));
  // We may run as root while Postgres runs as `postgres`, which must traverse this folder.
  if (dir) await chmod(dir, 0o711);
  const embedded = dir ? await startEmbeddedPostgres(join(dir, 'postgres'), logger) : undefined;
  const url = env.databaseUrl ?? embedded!.url;
  const admin = createPool({ url, poolMax: 1 }, logger);
  let failed = false;
  try {
    const server = await admin.query<{ v: string; sb: string; wm: string }>(
      `SELECT version() AS v, current_setting('shared_buffers') AS sb, current_setting('work_mem') AS wm`,
    );
    const s = server.rows[0]!;
    console.log(
      `ledger bench: ${env.databaseUrl ? 'DATABASE_URL' : 'embedded Postgres'} — ${s.v.split(' on ')[0]}, shared_buffers ${s.sb}, work_mem ${s.wm}`,
    );
    console.log(
      `${availableParallelism()} CPUs; load average 1/5/15 min at start: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' / ')}`,
    );
    if (values.only !== 'appends') for (const n of sizes) failed = !(await benchSize(admin, url, n)) || failed;
    if (values.only !== 'queries')
      failed = !(await benchAppends(admin, url, writers, env.measureSeconds, env.warmupSeconds)) || failed;
    console.log(
      `\nload average 1/5/15 min at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' / ')} (other work on this machine shows in the figures)`,
    );
  } finally {
    await admin.end();
    await embedded?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
  return failed ? 1 : 0;
}

async function benchSize(admin: Pool, url: Secret, n: number): Promise<boolean> {
  const schema = `ledger_bench_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE SCHEMA ${schema}`);
  // The CLI's pool size; no statement timeout here, so a slow query is measured rather than cut off (and flagged).
  const pool = createPool({ url, poolMax: 4, schema, statementTimeoutMs: 0 }, logger);
  try {
    await migrate(pool);
    console.log(`\n=== ${n.toLocaleString('en')} navigations ===`);
    const now = new Date();
    const seeded = await seedLedger(pool, n, now);
    console.log(`seeded in ${(seeded.totalMs / 1000).toFixed(1)} s:`);
    console.log(
      indent(
        formatTable(
          ['step', 'rows', 's'],
          seeded.steps.map((s) => [s.name, s.rows.toLocaleString('en'), (s.ms / 1000).toFixed(1)]),
        ),
      ),
    );
    console.log(`statuses: ${seeded.statuses.map((s) => `${s.status} ${s.n.toLocaleString('en')}`).join(', ')}`);
    console.log(
      'chains: navigation_events inserted with the chain trigger disabled; flow_seq/prev_hash/hash computed in the same INSERT by a running ' +
        "aggregate over navigation_event_hash (the trigger's function) per flow, then ledger_heads and one anchor sealing every head; " +
        'verifyChain below recomputes it all, and the sweep appends through the trigger',
    );
    console.log(`sizes: ${await relationSizes(pool)}`);
    console.log(
      `gates on the seeded data: ${evaluateGates(await findGateFigures(pool))
        .map((g) => `${g.gate} ${g.figure}`)
        .join('; ')}`,
    );
    return await measure(pool, now);
  } finally {
    await pool.end();
    await admin
      .query(`DROP SCHEMA ${schema} CASCADE`)
      .catch((err: unknown) => logger.warn({ err }, 'could not drop the bench schema'));
  }
}

async function benchAppends(
  admin: Pool,
  url: Secret,
  writers: number[],
  seconds: number,
  warmupSeconds: number,
): Promise<boolean> {
  const schema = `ledger_bench_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE SCHEMA ${schema}`);
  // A connection per writer, so writers wait on the database, not on the pool.
  const pool = createPool({ url, poolMax: Math.max(...writers), schema, statementTimeoutMs: 0 }, logger);
  try {
    await migrate(pool);
    const flows = await seedAppendFlows(pool, Math.max(...writers));
    console.log(
      `\n=== ledger appends: ${seconds} s per run after ${warmupSeconds} s of warm-up; each writer its own flows, one transaction per append ===`,
    );
    const rows: string[][] = [];
    for (const shape of APPEND_SHAPES) {
      for (const n of writers) {
        process.stderr.write(`appending: ${n} writers, ${shape.name}…\n`);
        const run = await measureAppends(pool, flows.slice(0, n), shape, seconds, warmupSeconds);
        rows.push([
          run.shape,
          String(run.writers),
          run.appends.toLocaleString('en'),
          run.perSecond.toFixed(0),
          run.p50Ms.toFixed(2),
          run.p99Ms.toFixed(2),
        ]);
      }
    }
    console.log(indent(formatTable(['transaction', 'writers', 'appends', 'appends/s', 'p50 ms', 'p99 ms'], rows)));
    console.log(
      `load average 1/5/15 min: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' / ')}`,
    );
    const verified = await chainCase.run(pool, 0).then(
      (n) => `the ledger verifies after the runs: ${n.toLocaleString('en')} rows`,
      (err: unknown) => `FAIL ${(err as Error).message}`,
    );
    console.log(verified);
    return !verified.startsWith('FAIL');
  } finally {
    await pool.end();
    await admin
      .query(`DROP SCHEMA ${schema} CASCADE`)
      .catch((err: unknown) => logger.warn({ err }, 'could not drop the bench schema'));
  }
}

async function measure(pool: Pool, now: Date): Promise<boolean> {
  // Five finished -32042 flows (9 events each) from pages spread through the table.
  const sample = `SELECT id FROM elicitation_navigations TABLESAMPLE SYSTEM (2) REPEATABLE (7) WHERE status = 'RETRY_RESPONSE_ACCEPTED' LIMIT 5`;
  const detailIds = (await pool.query<{ id: string }>(sample)).rows.map((r) => r.id);
  if (detailIds.length === 0) throw new Error('no accepted error_retry flow was seeded');
  const cases = ledgerCases({ now, detailIds, subject: 'user-01000' });
  const rows: string[][] = [];
  const planned: { name: string; singleFlow: boolean; plans: Plan[] }[] = [];
  const measureCase = async (c: LedgerCase) => {
    process.stderr.write(`measuring ${c.name}…\n`);
    const t: Timing = await time((i) => c.run(pool, i));
    const plans: Plan[] = [];
    await c.run(explaining(pool, plans), 0);
    planned.push({ name: c.name, singleFlow: c.singleFlow, plans });
    const slow = t.medianMs > CLI_STATEMENT_TIMEOUT_MS ? '  (over the CLI statement_timeout)' : '';
    rows.push([c.name, t.rows.toLocaleString('en'), String(t.runs), t.medianMs.toFixed(1), t.maxMs.toFixed(1) + slow]);
  };
  for (const c of cases) await measureCase(c);
  process.stderr.write('measuring the sweep…\n');
  const sweep = await measureSweep(pool);
  planned.push({ name: 'sweep: lockOverdueNavigations', singleFlow: false, plans: [sweep.plan] });
  await measureCase(chainCase);
  console.log(`\nqueries (pool of 4 like the CLI; median and max of the runs after a warm-up):`);
  console.log(indent(formatTable(['query', 'rows', 'runs', 'median ms', 'max ms'], rows)));
  console.log(`\n${sweep.summary}`);
  console.log(
    `load average 1/5/15 min: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')}`,
  );
  return printPlanChecks(planned);
}

async function measureSweep(pool: Pool): Promise<{ plan: Plan; summary: string }> {
  const plans: Plan[] = [];
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await lockOverdueNavigations(explaining(client, plans), systemClock.now(), 100);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  const batches: { ms: number; expired: number }[] = [];
  for (;;) {
    const t = performance.now();
    const result = await sweepOnce({ pool, clock: systemClock, logger }, { budgetMs: 1_000 });
    batches.push({ ms: performance.now() - t, expired: result.expiredNavigations });
    if (result.expiredNavigations === 0) break;
  }
  const full = batches.filter((b) => b.expired > 0);
  const empty = batches.at(-1)!;
  const total = full.reduce((sum, b) => sum + b.expired, 0);
  const summary =
    `sweep (sweepOnce, 1 s budget each, transactions of 10, one instance): ${total.toLocaleString('en')} overdue navigations expired in ${full.length} sweeps; ` +
    `per sweep median ${median(full.map((b) => b.ms)).toFixed(1)} ms, max ${Math.max(...full.map((b) => b.ms)).toFixed(1)} ms ` +
    `(${(full.reduce((s, b) => s + b.ms, 0) / total).toFixed(2)} ms per navigation); a sweep with nothing to do: ${empty.ms.toFixed(1)} ms`;
  return { plan: plans[0]!, summary };
}

function printPlanChecks(planned: { name: string; singleFlow: boolean; plans: Plan[] }[]): boolean {
  let ok = true;
  console.log(
    '\nplan checks (single-flow lookups: PASS = no sequential scan of any table; other queries: FLAG = a sequential scan of ' +
      `${LEDGER_TABLES.join(' or ')}, expected only where the question covers every flow):`,
  );
  for (const { name, singleFlow, plans } of planned) {
    for (const plan of plans) {
      const label = `${name}: ${plan.sql.slice(0, 90)}${plan.sql.length > 90 ? '…' : ''}`;
      if (singleFlow) {
        const pass = plan.seqScans.length === 0;
        ok &&= pass;
        console.log(`  ${pass ? 'PASS' : 'FAIL'}  ${label}\n        ${describePlan(plan)}`);
      } else {
        const flagged = plan.seqScans.filter((s) => LEDGER_TABLES.includes(s.table));
        console.log(`  ${flagged.length > 0 ? 'FLAG' : 'ok  '}  ${label}\n        ${describePlan(plan)}`);
      }
    }
  }
  console.log('\nquery plans (EXPLAIN ANALYZE, BUFFERS):');
  for (const { name, plans } of planned) {
    for (const plan of plans) console.log(`\n--- ${name}\n${plan.sql}\n${plan.text}`);
  }
  return ok;
}

async function relationSizes(pool: Pool): Promise<string> {
  const { rows } = await pool.query<{ name: string; n: string; size: string }>(
    `SELECT c.relname AS name, c.reltuples::bigint AS n, pg_size_pretty(pg_total_relation_size(c.oid)) AS size
       FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.reltuples > 0 ORDER BY pg_total_relation_size(c.oid) DESC`,
  );
  return rows.map((r) => `${r.name} ${Number(r.n).toLocaleString('en')} rows ${r.size}`).join(', ');
}

const indent = (text: string) => text.replace(/^/gm, '  ');

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
