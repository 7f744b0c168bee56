import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import type { IncomingMessage, RequestListener } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Pool } from '../src/db/pool.js';
import type { Fetch } from '../src/shared/httpClient.js';
import { LOOP_RESOLUTION_MS, loopDelayOf, STEP_HEADER, type BrokerStats } from './flowIpc.js';

/** What the broker process measures, attached where bench/flowBroker.ts assembles the broker. */
export interface Probe {
  listener(inner: RequestListener): RequestListener;
  fetch(inner: Fetch): Fetch;
  /** Counts every query of the pool, and times connection waits and queries, by request. */
  pool(target: Pool): Pool;
  log(level: number, line: string): void;
  /** Starts the measured window afresh. */
  reset(): void;
  stats(): BrokerStats;
  stop(): void;
}

/** The request being served, and where its time has gone so far. */
interface InFlight {
  step: string;
  upstreamMs: number;
  poolWaitMs: number;
  queryMs: number;
}

type AnyFn = (...args: unknown[]) => unknown;

export function createProbe(): Probe {
  const requests = new AsyncLocalStorage<InFlight>();
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  let stats = emptyStats();
  const sampler = setInterval(() => {
    const { rss, heapUsed } = process.memoryUsage();
    stats.samples++;
    stats.rssPeak = Math.max(stats.rssPeak, rss);
    stats.heapUsedPeak = Math.max(stats.heapUsedPeak, heapUsed);
  }, 50);

  return {
    listener: (inner) => (req, res) => {
      const request: InFlight = { step: stepOf(req), upstreamMs: 0, poolWaitMs: 0, queryMs: 0 };
      const arrived = performance.now();
      res.once('finish', () => {
        if (res.statusCode >= 500) stats.serverErrors++;
        const times = (stats.requests[request.step] ??= { serverMs: [], upstreamMs: [], poolWaitMs: [], queryMs: [] });
        times.serverMs.push(performance.now() - arrived);
        times.upstreamMs.push(request.upstreamMs);
        times.poolWaitMs.push(request.poolWaitMs);
        times.queryMs.push(request.queryMs);
      });
      requests.run(request, () => inner(req, res));
    },

    fetch: (inner) =>
      (async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
        const request = requests.getStore();
        const started = performance.now();
        try {
          return await inner(input, init);
        } finally {
          if (request) request.upstreamMs += performance.now() - started;
        }
      }) as Fetch,

    pool(target) {
      // pg-pool hands a queued caller its client from inside another caller's release(), so the
      // callback (pool.query's own) is bound to its caller's context, or its queries would be
      // counted under whichever request released the client.
      const connect = target.connect.bind(target) as (callback?: AnyFn) => unknown;
      (target as unknown as { connect: typeof connect }).connect = (callback) => {
        const request = requests.getStore();
        const asked = performance.now();
        const acquired = () => {
          if (request) request.poolWaitMs += performance.now() - asked;
        };
        if (callback) {
          return connect(
            AsyncResource.bind((...args: unknown[]) => {
              acquired();
              callback(...args);
            }),
          );
        }
        return (connect() as Promise<unknown>).then((client) => {
          acquired();
          return client;
        });
      };
      // Counted on each client, not on the pool: pool.query runs through a client's query and
      // transactions use clients directly, so every statement (BEGIN/COMMIT too) counts once.
      target.on('connect', (client) => {
        const query = client.query.bind(client) as AnyFn;
        // pg's query has a dozen overloads; the wrapper forwards whatever it is given.
        (client as unknown as { query: AnyFn }).query = (...args: unknown[]) => {
          const request = requests.getStore();
          const step = request?.step ?? 'outside a request';
          stats.queries++;
          stats.queriesByStep[step] = (stats.queriesByStep[step] ?? 0) + 1;
          const started = performance.now();
          const answered = () => {
            if (request) request.queryMs += performance.now() - started;
          };
          const last = args.at(-1);
          if (typeof last === 'function') {
            return query(...args.slice(0, -1), (...results: unknown[]) => {
              answered();
              (last as AnyFn)(...results);
            });
          }
          const result = query(...args);
          if (result instanceof Promise) result.then(answered, answered);
          return result;
        };
      });
      return target;
    },

    log(level, line) {
      if (level >= 50) stats.errorLogs++;
      else stats.warnLogs++;
      if (stats.firstLogs.length < 5) stats.firstLogs.push(line);
    },
    reset() {
      stats = emptyStats();
      loop.reset();
    },
    stats: () => ({ ...stats, loopDelay: loopDelayOf(loop) }),
    stop() {
      clearInterval(sampler);
      loop.disable();
    },
  };
}

function stepOf(req: IncomingMessage): string {
  const path = (req.url ?? '/').split('?')[0]!.replace(/^\/connect\/[\w-]{43}$/, '/connect/:handle');
  const step = req.headers[STEP_HEADER];
  return `${req.method ?? 'GET'} ${path}${typeof step === 'string' ? ` ${step}` : ''}`;
}

function emptyStats(): BrokerStats {
  const rss = process.memoryUsage().rss;
  return {
    queries: 0,
    queriesByStep: {},
    serverErrors: 0,
    requests: {},
    loopDelay: { p50: 0, p99: 0, max: 0 },
    rssAtWindow: rss,
    rssPeak: rss,
    heapUsedPeak: 0,
    samples: 0,
    warnLogs: 0,
    errorLogs: 0,
    firstLogs: [],
  };
}
