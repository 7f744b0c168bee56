import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import type { FlowContext } from './flowDriver.js';
import { positiveInt, readFlowEnv } from './flowEnv.js';
import { createUserGates } from './flowGate.js';
import { percentiles } from './flowReport.js';
import { fetchTokens } from './flowRun.js';
import { reportService } from './flowServices.js';
import { startFlowStack, type FlowStack } from './flowStack.js';
import { verifyFlows } from './flowVerify.js';
import { formatColumns } from './report.js';
import { callLoop, chromiumFlow, emptyCounts, flowLoop, legacyLoop, type WindowCounts } from './soakLoad.js';

// npm run soak — a mixed load on one broker process for SOAK_SECONDS (default 120; the
// documented run is 900), printed per window of SOAK_WINDOW_SECONDS (default 60): SOAK_CALLERS
// (default 4) loops of tools/call, connect flows one at a time in a scripted browser (each ending
// in an accepted reports_create, its retry included), one connect flow per window in Debian's
// Chromium, and 2025-11-25 sessions opened, used and ended. Per window it prints the broker's
// RSS and heap, its open file descriptors, the database's connections, the tool calls' p50/p99,
// and every error on either side. Exits 1 on any error, on a flow whose report is missing or
// made twice, or when the resources do not stay flat (the last window against the first).

const FLOW_USERS = ['alice', 'bob'];
const CALL_USERS = ['mallory', 'alice', 'bob'];
const CHROMIUM_USER = 'ops';

interface WindowRow {
  counts: WindowCounts;
  rssMb: number;
  heapMb: number;
  fds: number;
  dbConnections: number;
  serverErrors: number;
  errorLogs: number;
  firstLogs: string[];
}

async function main(): Promise<boolean> {
  const env = readFlowEnv(process.env);
  const seconds = positiveInt(process.env, 'SOAK_SECONDS', 120, 86_400);
  const windowSeconds = Math.min(seconds, positiveInt(process.env, 'SOAK_WINDOW_SECONDS', 60, 3_600));
  const callers = positiveInt(process.env, 'SOAK_CALLERS', 4, 64);
  process.stdout.write('soak: starting Postgres, the development servers and the broker process…\n');
  // The soak's two flow users start a flow every second or so, for as long as it runs: more than the
  // default 60 an hour (src/broker/quotas.ts), which is a limit on people, not on this load.
  const stack = await startFlowStack(env, { quotas: { navigationsPerHour: 100_000 } });
  process.once('SIGINT', () => void stack.close().finally(() => process.exit(130)));
  try {
    const tokens = await fetchTokens(stack, [...new Set([...FLOW_USERS, ...CALL_USERS, CHROMIUM_USER])]);
    const service = reportService(stack);
    const forget = async (login: string) =>
      void (await stack.pool.query(
        'DELETE FROM secrets WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3',
        [stack.dev.idp.issuer, login, service.provider],
      ));
    const ctx: FlowContext = {
      brokerUrl: stack.brokerUrl,
      service,
      fetch: stack.fetch,
      tokens,
      gates: createUserGates(),
      forget,
    };
    const prefix = `soak ${randomBytes(3).toString('hex')} #`;
    let flowIndex = 0;
    const rows: WindowRow[] = [];
    process.stdout.write(
      `soak: ${seconds} s in windows of ${windowSeconds} s; ${callers} tools/call loops, flows one at a time, one Chromium flow and 2025-11-25 sessions per window\n`,
    );
    for (let started = Date.now(), w = 0; Date.now() - started < seconds * 1000; w++) {
      await stack.broker.openWindow();
      const counts = emptyCounts();
      const until = Date.now() + windowSeconds * 1000;
      await Promise.all([
        ...Array.from({ length: callers }, (_, i) => {
          const login = CALL_USERS[i % CALL_USERS.length]!;
          return callLoop(stack, tokens.get(login)!, login, until, counts);
        }),
        flowLoop(ctx, FLOW_USERS, prefix, until, counts, () => flowIndex++),
        legacyLoop(stack, tokens.get('mallory')!, 'mallory', until, counts),
        (async (index) =>
          chromiumFlow(stack, tokens.get(CHROMIUM_USER)!, CHROMIUM_USER, index, `${prefix}${index}`, counts, () =>
            forget(CHROMIUM_USER),
          ))(flowIndex++),
      ]);
      const row = await measure(stack, counts);
      rows.push(row);
      process.stdout.write(`${formatRow(rows.length, windowSeconds, row)}\n`);
    }

    const flows = rows.flatMap((r) => r.counts.flows);
    // The users whose reports the flows made (the callers' users connect nothing).
    const makers = new Map([...FLOW_USERS, CHROMIUM_USER].map((login) => [login, tokens.get(login)!]));
    const verification = await verifyFlows({ pool: stack.pool, service, tokens: makers }, flows, prefix);
    const chromium = rows.reduce((n, r) => n + r.counts.chromiumFlows, 0);
    const errors = rows.reduce((n, r) => n + r.counts.errors.length + r.serverErrors + r.errorLogs, 0);
    const flat = flatness(rows);
    process.stdout.write(`\n${formatTable(rows, windowSeconds).join('\n')}\n\n`);
    process.stdout.write(
      `flows: ${verification.flows} asked (${chromium} of them in Chromium), ${verification.completed} completed, ${verification.made} reports made, lost ${verification.lost.length}, doubled ${verification.doubled.length}\n`,
    );
    for (const line of [...verification.problems, ...flat.problems]) process.stdout.write(`  ✗ ${line}\n`);
    for (const r of rows)
      for (const line of [...r.counts.errors.slice(0, 5), ...r.firstLogs.slice(0, 3)])
        process.stdout.write(`  ✗ ${line}\n`);
    const ok = errors === 0 && verification.ok && flat.ok && chromium === rows.length;
    process.stdout.write(
      ok
        ? `OK: ${errors} errors, 0 lost, 0 doubled, flat resources\n`
        : `FAILED: ${errors} errors, ${verification.lost.length} lost, ${verification.doubled.length} doubled${flat.ok ? '' : ', resources grew'}${chromium === rows.length ? '' : `, ${rows.length - chromium} Chromium flows failed`}\n`,
    );
    return ok;
  } finally {
    await stack.close();
  }
}

async function measure(stack: FlowStack, counts: WindowCounts): Promise<WindowRow> {
  const stats = await stack.broker.stats();
  const fds = (await readdir(`/proc/${stack.broker.pid}/fd`).catch(() => [])).length;
  const { rows } = await stack.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  return {
    counts,
    rssMb: stats.rssPeak / 2 ** 20,
    heapMb: stats.heapUsedPeak / 2 ** 20,
    fds,
    dbConnections: rows[0]!.n,
    serverErrors: stats.serverErrors,
    errorLogs: stats.errorLogs,
    firstLogs: stats.firstLogs,
  };
}

/**
 * Flat: after the first window (start-up, caches, JIT), RSS may not grow by more than a quarter
 * (and 40 MB) and file descriptors and database connections by more than a few.
 */
function flatness(rows: readonly WindowRow[]): { ok: boolean; problems: string[] } {
  const problems: string[] = [];
  const first = rows[0];
  const last = rows.at(-1);
  if (!first || !last || rows.length < 2) return { ok: rows.length > 0, problems };
  if (last.rssMb > Math.max(first.rssMb * 1.25, first.rssMb + 40))
    problems.push(`RSS grew from ${first.rssMb.toFixed(0)} MB to ${last.rssMb.toFixed(0)} MB`);
  if (last.fds > first.fds + 10) problems.push(`open file descriptors grew from ${first.fds} to ${last.fds}`);
  if (last.dbConnections > first.dbConnections + 3)
    problems.push(`database connections grew from ${first.dbConnections} to ${last.dbConnections}`);
  return { ok: problems.length === 0, problems };
}

const HEADER = [
  'window',
  'calls',
  'p50 ms',
  'p99 ms',
  'flows',
  'chromium',
  'legacy',
  'errors',
  'RSS MB',
  'heap MB',
  'fds',
  'db conns',
];

function cells(n: number, windowSeconds: number, r: WindowRow): string[] {
  const p = percentiles(r.counts.callMs);
  return [
    `${((n * windowSeconds) / 60).toFixed(1)} min`,
    String(r.counts.calls),
    p.p50.toFixed(1),
    p.p99.toFixed(1),
    String(r.counts.flows.length),
    String(r.counts.chromiumFlows),
    String(r.counts.legacySessions),
    String(r.counts.errors.length + r.serverErrors + r.errorLogs),
    r.rssMb.toFixed(0),
    r.heapMb.toFixed(0),
    String(r.fds),
    String(r.dbConnections),
  ];
}

const formatRow = (n: number, windowSeconds: number, r: WindowRow) =>
  HEADER.map((h, i) => `${h} ${cells(n, windowSeconds, r)[i]}`).join(' · ');

const formatTable = (rows: readonly WindowRow[], windowSeconds: number) =>
  formatColumns(
    HEADER,
    rows.map((r, i) => cells(i + 1, windowSeconds, r)),
  );

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    process.stderr.write(`soak: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
