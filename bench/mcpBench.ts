import { availableParallelism, loadavg } from 'node:os';
import { fetchDevToken } from '../src/cli/devToken.js';
import { DEV_PASSWORD } from '../src/dev/devUsers.js';
import { createLogger } from '../src/shared/logger.js';
import { readBenchEnv } from './benchEnv.js';
import { BROKER_FORMS, compiledBrokerDir, loadBrokerModules } from './brokerModules.js';
import { runLoad } from './load.js';
import { measureDeclaredTools, prepareDeclaredTools } from './declaredBench.js';
import { formatDeclaredReport } from './declaredReport.js';
import { measureBothForms } from './formWindows.js';
import { formatMcpFormComparison, type McpFormRuns } from './mcpForms.js';
import type { LoadResult } from './load.js';
import { formatReport, type Measurement, type ServerName } from './report.js';
import { sampleCheck } from './sampleCheck.js';
import { startBenchStack } from './stack.js';
import { checkUpstream, measureUpstream, prepareUpstream } from './upstreamBench.js';
import { formatUpstreamReport } from './upstreamReport.js';
import { CASES, DECLARED_CASES, type PeerCaseName } from './wire.js';

// npm run bench:mcp — the broker against an SDK v2 createMcpHandler peer doing
// the same work (targets: tools/list ≥ 3×, tools/call notes_list ≥ 2×, broker
// p99 < 20 ms at 16 connections); then a tool declared in a TOOLS_FILE beside
// the same call written with defineConnectionTool (the declared one at most
// 10 % slower); then a tools/call proxied to the development upstream MCP server
// beside the same call sent to it directly, memo in a process of its own (the broker adds at most
// 2 ms at p50, measured at one connection, and keeps at least 70 % of the direct req/s at 16).
// Every broker row runs on the broker from src/ through tsx (npm start) and on the compiled
// build (dist/, built first: bench/brokerModules.ts), in alternating windows
// (bench/formWindows.ts); a table of the two and a verdict close the run. A measurement, not a test: a MISS or a slower compiled
// build still exits 0; a failed request exits 1.

const CONNECTIONS = 16;
// Seconds per window: 4 (8 before the compiled rows were added): each form gets two windows of
// a case, as long as the one window before, and a run stays about as long.
const DEFAULT_SECONDS = 4;

async function main(): Promise<number> {
  // The bench is a development harness like test/: it reads its two variables here.
  const env = readBenchEnv(process.env, DEFAULT_SECONDS);
  const logger = createLogger({ level: 'warn', name: 'mcp-bench' }, process.stderr);
  const compiledDir = await compiledBrokerDir(process.env, (line) => console.log(line));
  const forms = {
    tsx: await loadBrokerModules('tsx', compiledDir),
    compiled: await loadBrokerModules('compiled', compiledDir),
  };
  console.log('starting the broker (both forms), the development identity provider, Postgres and the SDK peer…');
  const stack = await startBenchStack({ databaseUrl: env.databaseUrl, logger, forms });
  // Ctrl-C: stop Postgres and remove the temp folder before leaving. Postgres got the
  // signal too, so the pools' disconnect warnings that follow are expected: silence them.
  process.once('SIGINT', () => {
    logger.level = 'error';
    void stack.close().finally(() => process.exit(130));
  });
  console.log(
    'peer: @modelcontextprotocol/server createMcpHandler behind @modelcontextprotocol/node toNodeHandler; ' +
      'both servers verify the bearer with jose (same issuer, audience, algorithms) and remember verified tokens until they expire',
  );
  try {
    const token = await fetchDevToken({
      issuer: stack.issuer,
      resource: stack.brokerMcpUrl,
      login: 'alice',
      password: DEV_PASSWORD,
      fetch: stack.fetch,
    });
    const targets: { name: ServerName; url: string }[] = [
      { name: 'broker', url: stack.brokerMcpUrl },
      { name: 'peer', url: stack.peerMcpUrl },
    ];
    const check = await sampleCheck(stack.fetch, targets, token);
    for (const note of check.notes) console.log(`note: ${note}`);
    stack.use('compiled');
    check.failures.push(
      ...(await sampleCheck(stack.fetch, [{ name: 'broker (compiled)', url: stack.brokerMcpUrl }], token)).failures,
    );
    stack.use('tsx');
    if (check.failures.length > 0) {
      console.error(`sample requests failed, nothing measured:\n${check.failures.map((f) => `  ${f}`).join('\n')}`);
      return 1;
    }

    const measure = async (caseName: PeerCaseName, name: string, url: string) => {
      process.stdout.write(`measuring ${caseName} on ${name}… `);
      const result = await runLoad({
        url,
        caseName,
        token,
        caPem: stack.caPem,
        connections: CONNECTIONS,
        warmupMs: env.warmupSeconds * 1000,
        durationMs: env.measureSeconds * 1000,
      });
      console.log(`${result.requestsPerSecond.toFixed(0)} req/s`);
      return result;
    };
    // Per case the broker's windows on both forms (the tsx one's are the report's "broker"), then the peer.
    const measurements: Measurement[] = [];
    const compiledCases = {} as Record<PeerCaseName, LoadResult>;
    for (const caseName of CASES) {
      const broker = await measureBothForms(stack.use, (form) =>
        measure(caseName, form === 'tsx' ? 'broker' : 'broker (compiled)', stack.brokerMcpUrl),
      );
      measurements.push({ caseName, server: 'broker', result: broker.tsx });
      compiledCases[caseName] = broker.compiled;
      measurements.push({ caseName, server: 'peer', result: await measure(caseName, 'peer', stack.peerMcpUrl) });
    }
    console.log(`\n${formatReport(measurements, CONNECTIONS, env.measureSeconds)}`);

    console.log(
      '\nserving github_issue_declared (bench/mcpBenchTools.yaml) and github_issue_coded (defineConnectionTool) on the GitHub-like provider; connecting alice…',
    );
    await prepareDeclaredTools(stack, token);
    const declaredFailures: string[] = [];
    for (const form of BROKER_FORMS) {
      stack.use(form);
      const broker = { name: `broker (${form})`, url: stack.brokerMcpUrl };
      declaredFailures.push(...(await sampleCheck(stack.fetch, [broker], token, DECLARED_CASES)).failures);
    }
    stack.use('tsx');
    if (declaredFailures.length > 0) {
      console.error(
        `sample requests failed, the declared tools not measured:\n${declaredFailures.map((f) => `  ${f}`).join('\n')}`,
      );
      return 1;
    }
    const job = {
      url: stack.brokerMcpUrl,
      token,
      caPem: stack.caPem,
      connections: CONNECTIONS,
      warmupMs: env.warmupSeconds * 1000,
      durationMs: env.measureSeconds * 1000,
    };
    const declared = await measureDeclaredTools(job, stack.use, (line) => console.log(`measured ${line}`));
    console.log(`\n${formatDeclaredReport(declared.tsx, CONNECTIONS, env.measureSeconds)}`);

    console.log(
      '\nserving the development upstream MCP server memo (src/dev/devUpstream.ts) as an upstream; connecting alice…',
    );
    const upstreamToken = await prepareUpstream(stack, token);
    const upstreamFailures = await checkUpstream(stack, token, upstreamToken);
    if (upstreamFailures.length > 0) {
      console.error(
        `sample requests failed, the upstream call not measured:\n${upstreamFailures.map((f) => `  ${f}`).join('\n')}`,
      );
      return 1;
    }
    const upstream = await measureUpstream(stack, job, { mcp: token, upstream: upstreamToken }, (line) =>
      console.log(`measured ${line}`),
    );
    console.log(`\n${formatUpstreamReport(upstream.tsx, CONNECTIONS, env.measureSeconds)}`);

    const cases = Object.fromEntries(
      CASES.map((caseName) => {
        const of = (server: ServerName) => measurements.find((m) => m.caseName === caseName && m.server === server)!;
        return [caseName, { tsx: of('broker').result, compiled: compiledCases[caseName], peer: of('peer').result }];
      }),
    ) as McpFormRuns['cases'];
    console.log(`\n${formatMcpFormComparison({ cases, declared, upstream }, CONNECTIONS, env.measureSeconds)}`);

    // Servers, Postgres and the load generator share this machine; a busy machine shows in p99 first.
    console.log(
      `\n${availableParallelism()} CPUs; load average over 1/5/15 min after the run: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' / ')}`,
    );
    const failed = [
      ...measurements.map((m) => m.result),
      ...Object.values(compiledCases),
      ...BROKER_FORMS.flatMap((f) => [
        ...declared[f].coded,
        ...declared[f].declared,
        upstream[f].direct,
        upstream[f].proxied,
        upstream[f].directAlone,
        upstream[f].proxiedAlone,
      ]),
    ].some((r) => r.errors > 0);
    return failed ? 1 : 0;
  } finally {
    await stack.close();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
