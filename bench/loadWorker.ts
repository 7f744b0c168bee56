import { createHistogram } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'undici';
import type { GeneratorResult, LoadJob } from './load.js';
import { problemWith, requestFor } from './wire.js';

// The load generator, in its own process so it never shares an event loop with
// the servers it measures. Closed loop: each connection has one request in
// flight and sends the next as soon as the previous answer is read and checked.
// TLS is verified against the bench CA (autocannon forces rejectUnauthorized: false).

async function run(job: LoadJob): Promise<GeneratorResult> {
  const url = new URL(job.url);
  const { headers, body } = requestFor(job.caseName, job.token);
  const clients = Array.from(
    { length: job.connections },
    () => new Client(url.origin, { pipelining: 1, connect: { ca: job.caPem, rejectUnauthorized: true } }),
  );
  const latency = createHistogram({ lowest: 1, highest: 60_000_000_000, figures: 3 });
  const errorCounts = new Map<string, number>();
  let recording = false;
  let stopped = false;
  let completed = 0;

  const fail = (why: string) => {
    const key = why.slice(0, 200);
    errorCounts.set(key, (errorCounts.get(key) ?? 0) + 1);
  };
  const loop = async (client: Client) => {
    while (!stopped) {
      const started = process.hrtime.bigint();
      let problem: string | undefined;
      try {
        const response = await client.request({ path: url.pathname, method: 'POST', headers, body });
        const text = await response.body.text();
        problem = problemWith(job.caseName, response.statusCode, String(response.headers['content-type'] ?? ''), text);
      } catch (err) {
        problem = `transport: ${(err as Error).message}`;
      }
      if (recording && !stopped) {
        latency.record(Math.max(1, Number(process.hrtime.bigint() - started)));
        completed++;
        if (problem) fail(problem);
      }
      if (problem?.startsWith('transport:')) await sleep(50);
    }
  };

  const loops = clients.map(loop);
  await sleep(job.warmupMs);
  recording = true;
  process.send?.({ measuring: true });
  const from = process.hrtime.bigint();
  await sleep(job.durationMs);
  stopped = true;
  const seconds = Number(process.hrtime.bigint() - from) / 1e9;
  await Promise.all(loops);
  await Promise.all(clients.map((c) => c.close()));
  const errors = [...errorCounts.values()].reduce((a, b) => a + b, 0);
  return {
    requests: completed,
    seconds,
    requestsPerSecond: completed / seconds,
    p50Ms: latency.percentile(50) / 1e6,
    p99Ms: latency.percentile(99) / 1e6,
    errors,
    errorSamples: [...errorCounts.entries()].slice(0, 5).map(([why, count]) => `${count} × ${why}`),
  };
}

process.once('message', (job: LoadJob) => {
  run(job).then(
    (result) => process.send?.({ ok: true, result }, () => process.disconnect()),
    (err: unknown) =>
      process.send?.({ ok: false, error: String((err as Error).stack ?? err) }, () => process.disconnect()),
  );
});
