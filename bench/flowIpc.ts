import type { IntervalHistogram } from 'node:perf_hooks';
import type { Quotas } from '../src/config/limits.js';

// What the flow bench (parent) and its broker process (bench/flowBroker.ts) share: the messages, and one measure.

export interface BrokerChildConfig {
  databaseUrl: string;
  /** The bench's schema; every connection of the broker's pool uses it. */
  schema: string;
  poolMax: number;
  idpIssuer: string;
  idpClientId: string;
  /** The broker's provider list: the Report Service's entry and the GitHub-like provider's (src/dev/devStack.ts). */
  providers: Record<string, unknown>[];
  /** QUOTA_* for the broker; absent ones take the defaults. */
  quotas?: Partial<Quotas>;
}

export interface BrokerStats {
  /** Every query the broker's pool ran since the window opened (BEGIN/COMMIT included). */
  queries: number;
  /** The same, by the request that ran them ("GET /connect/:handle", "POST /mcp elicit", …). */
  queriesByStep: Record<string, number>;
  /** Responses of 500 or more the broker sent since the window opened. */
  serverErrors: number;
  /** Per step ("GET /oauth/callback", "POST /mcp retry", …): where each of its requests spent its time. */
  requests: Record<string, RequestTimes>;
  /** The broker's event-loop delay over the window (perf_hooks.monitorEventLoopDelay), in ms. */
  loopDelay: { p50: number; p99: number; max: number };
  /** process.memoryUsage().rss, sampled every 50 ms: when the window opened, and its peak since. */
  rssAtWindow: number;
  rssPeak: number;
  heapUsedPeak: number;
  samples: number;
  /** Warn and error log lines (the first few of each) since the window opened. */
  warnLogs: number;
  errorLogs: number;
  firstLogs: string[];
}

/** One entry per request, in ms. The parts are sequential in the flows measured here, so they do not overlap. */
export interface RequestTimes {
  /** Arrival to the last byte of the response. */
  serverMs: number[];
  /** Waiting for upstream HTTP (the identity provider, the Report Service's token endpoint and API). */
  upstreamMs: number[];
  /** Waiting for a connection of the broker's pool. */
  poolWaitMs: number[];
  /** Running queries (sent until answered). */
  queryMs: number[];
}

export type ToBroker =
  { type: 'configure'; config: BrokerChildConfig } | { type: 'window' } | { type: 'stats' } | { type: 'stop' };

export type FromBroker =
  | { type: 'listening'; port: number }
  | { type: 'ready' }
  | { type: 'window-open' }
  | { type: 'stats'; stats: BrokerStats }
  | { type: 'stopped' }
  | { type: 'failed'; message: string };

/** Header the bench sets on its MCP requests so the broker process can tell an elicitation from a retry. */
export const STEP_HEADER = 'x-bench-step';

export const LOOP_RESOLUTION_MS = 10;

/** An event-loop delay histogram in ms, less the sampling interval that every sample includes. */
export function loopDelayOf(histogram: IntervalHistogram): { p50: number; p99: number; max: number } {
  const late = (ns: number) => Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS);
  return { p50: late(histogram.percentile(50)), p99: late(histogram.percentile(99)), max: late(histogram.max) };
}
