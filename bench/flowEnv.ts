import { Secret } from '../src/shared/secret.js';

export interface FlowEnv {
  /** Complete connect flows to run (BENCH_FLOWS, default 200; bench:loop 100). */
  flows: number;
  /** Flows in flight at once (BENCH_CONCURRENCY, default 20; bench:loop 10). */
  concurrency: number;
  /** An existing Postgres (DATABASE_URL); the bench works in its own schema there and drops it. */
  databaseUrl: Secret | undefined;
}

/**
 * The flow bench's only reader of the environment: a development harness,
 * like test/, so it reads its variables directly instead of through loadConfig.
 */
export function readFlowEnv(
  env: Readonly<Record<string, string | undefined>>,
  defaults: { flows: number; concurrency: number } = { flows: 200, concurrency: 20 },
): FlowEnv {
  const flows = positiveInt(env, 'BENCH_FLOWS', defaults.flows, 100_000);
  const concurrency = positiveInt(env, 'BENCH_CONCURRENCY', defaults.concurrency, 1_000);
  const url = env['DATABASE_URL'];
  return { flows, concurrency: Math.min(concurrency, flows), databaseUrl: url ? new Secret(url) : undefined };
}

export function positiveInt(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  fallback: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw new Error(`${name} must be a whole number from 1 to ${max}, got ${JSON.stringify(raw)}`);
  return value;
}

/**
 * Refuses a flow count that would take a user past the default quota of flows an hour
 * (src/broker/quotas.ts): the flows past it would be refused, not measured. `extraPerUser`
 * counts flows a run starts besides the N (bench:loop's victim link).
 */
export function assertFlowsWithinQuota(flows: number, users: number, perHour: number, extraPerUser = 0): void {
  const perUser = Math.ceil(flows / users) + extraPerUser;
  if (perUser > perHour)
    throw new Error(
      `BENCH_FLOWS=${flows} gives ${perUser} flows per user, more than the default quota of ${perHour} an hour; use at most ${(perHour - extraPerUser) * users}`,
    );
}
