import { loadavg } from 'node:os';
import type { Principal } from '../src/auth/principal.js';
import { fetchDevToken } from '../src/cli/devToken.js';
import { DEV_PASSWORD, devUsers } from '../src/dev/devUsers.js';
import { PROACTIVE_REFRESH } from '../src/jobs/proactiveRefresh.js';
import { createLogger } from '../src/shared/logger.js';
import { readBenchEnv } from './benchEnv.js';
import { positiveInt } from './flowEnv.js';
import { figuresOf, formatRefreshReport } from './refreshReport.js';
import { seedConnections } from './refreshSeed.js';
import { PROVIDER_ID, PROVIDER_SCOPES, startRefreshStack, type RefreshStack } from './refreshStack.js';
import { runStorm } from './refreshStorm.js';
import { checkStored } from './refreshVerify.js';
import { requestFor } from './wire.js';

// npm run bench:refresh — BENCH_CONNECTIONS connections (default 1,000) whose access tokens all
// expire at one moment: the development users' (who call) and synthetic subjects', seeded with the
// broker's own functions. From that moment two brokers on one database each run the proactive
// refresh back to back while the users call a connection tool over MCP for BENCH_SECONDS (default
// 45). A measurement: speed never fails it; a reused refresh token, a connection refreshed other
// than once, a failed call or a wrongly stored token exits 1.

const CALLERS_PER_USER = 2;
const REFRESH_DELAY_MS = { min: 30, max: 80 };

async function main(): Promise<boolean> {
  const env = readBenchEnv(process.env, 45);
  const connections = positiveInt(process.env, 'BENCH_CONNECTIONS', 1000, 100_000);
  const logger = createLogger({ level: 'warn', name: 'refresh-bench' }, process.stderr);
  const callers = devUsers.slice(0, connections).map((u) => u.login);
  process.stdout.write(
    `refresh bench: ${connections.toLocaleString('en-US')} connections (${callers.join(', ')} calling, ${(connections - callers.length).toLocaleString('en-US')} synthetic), every access token expiring at one moment; ` +
      `two brokers on one database (${env.databaseUrl ? 'DATABASE_URL' : 'embedded Postgres'}), each running refreshExpiring back to back ` +
      `(horizon ${PROACTIVE_REFRESH.horizonMs / 60_000} min, batch ${PROACTIVE_REFRESH.batch}, ${PROACTIVE_REFRESH.concurrency} at a time); ` +
      `${callers.length * CALLERS_PER_USER} callers (${CALLERS_PER_USER} per user, alternating brokers) for ${env.measureSeconds} s; ` +
      `the provider answers a refresh after ${REFRESH_DELAY_MS.min}–${REFRESH_DELAY_MS.max} ms; the brokers, callers, identity provider and token server share this process; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
  );
  const stack = await startRefreshStack({ databaseUrl: env.databaseUrl, logger, refreshDelayMs: REFRESH_DELAY_MS });
  // Ctrl-C: stop Postgres and remove the temp folder before leaving. Postgres got the signal too,
  // so the pools' disconnect warnings that follow are expected: silence them.
  process.once('SIGINT', () => {
    logger.level = 'error';
    void stack.close().finally(() => process.exit(130));
  });
  try {
    const tokens = new Map<string, string>();
    for (const login of callers) {
      const token = await fetchDevToken({
        issuer: stack.issuer,
        resource: stack.mcpResourceUrl,
        login,
        password: DEV_PASSWORD,
        fetch: stack.fetch,
      });
      tokens.set(login, token);
      await warmUp(stack, token);
    }
    const subjects: Principal[] = Array.from({ length: connections }, (_, i) => ({
      iss: stack.issuer,
      sub: callers[i] ?? `refresh-bench-${String(i).padStart(6, '0')}`,
    }));
    // Far enough ahead for the seeding to finish first, so the storm starts as the tokens expire.
    const expiresAt = new Date(Date.now() + 2_000 + connections * 6);
    const seeding = Date.now();
    await seedConnections(stack.vault.pool, stack.vault, {
      server: stack.provider,
      provider: PROVIDER_ID,
      scopes: PROVIDER_SCOPES,
      subjects,
      expiresAt,
    });
    process.stdout.write(
      `refresh bench: seeded in ${((Date.now() - seeding) / 1000).toFixed(2)} s; the storm starts as the tokens expire…\n`,
    );
    const run = await runStorm(stack, {
      tokens,
      callersPerUser: CALLERS_PER_USER,
      seconds: env.measureSeconds,
      connections,
      expiresAt,
    });
    if (run.lateMs > 0)
      process.stdout.write(`refresh bench: the seeding ran ${run.lateMs} ms past the expiry; the storm started then\n`);
    const stored = await checkStored(stack, PROVIDER_ID, subjects);
    const figures = figuresOf(
      run,
      stack.provider.served,
      stack.provider.counts(),
      subjects.map((s) => s.sub),
    );
    const { text, problems } = formatRefreshReport(figures, run, stored);
    process.stdout.write(`${text}\n\n`);
    process.stdout.write(
      problems.length === 0
        ? 'OK: every connection was renewed exactly once, no refresh token was used twice, every call succeeded\n'
        : `FAILED:\n${problems.map((p) => `  ${p}`).join('\n')}\n`,
    );
    return problems.length === 0;
  } finally {
    await stack.close();
  }
}

/** tools/list on each broker: the bearer check's key set fetched and a TLS connection open before the storm. */
async function warmUp(stack: RefreshStack, token: string): Promise<void> {
  const { headers, body } = requestFor('tools/list', token);
  for (const { url } of stack.instances) {
    const response = await stack.fetch(`${url}/mcp`, { method: 'POST', headers, body });
    const text = await response.text();
    if (response.status !== 200 || !text.includes('refresh_bench_whoami'))
      throw new Error(`tools/list on ${url} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
  }
}

main().then(
  // Everything was closed above; an idle keep-alive socket must not hold the exit back.
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    process.stderr.write(`refresh bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
