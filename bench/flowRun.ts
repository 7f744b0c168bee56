import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fetchDevToken } from '../src/cli/devToken.js';
import { DEV_PASSWORD } from '../src/dev/devUsers.js';
import { runFlow, type FlowContext, type FlowResult } from './flowDriver.js';
import { createUserGates } from './flowGate.js';
import { LOOP_RESOLUTION_MS, loopDelayOf, type BrokerStats } from './flowIpc.js';
import type { FlowService } from './flowServices.js';
import type { FlowStack } from './flowStack.js';

// What bench:flow and bench:loop share: the users' MCP tokens, and N complete
// connect flows at a concurrency, measured in the broker's window.

/** An MCP access token per login, from the stack's development identity provider. */
export async function fetchTokens(stack: FlowStack, logins: readonly string[]): Promise<Map<string, string>> {
  const tokens = new Map<string, string>();
  for (const login of logins) {
    tokens.set(
      login,
      await fetchDevToken({
        issuer: stack.dev.idp.issuer,
        resource: `${stack.brokerUrl}/mcp`,
        login,
        password: DEV_PASSWORD,
        fetch: stack.fetch,
      }),
    );
  }
  return tokens;
}

export interface FlowsRun {
  results: FlowResult[];
  wallMs: number;
  /** The broker process's figures over the window (from just before the first flow to just after the last). */
  broker: BrokerStats;
  /** The bench process's event-loop delay (it also serves the identity provider and the Report Service). */
  benchLoopDelay: { p50: number; p99: number; max: number };
}

export interface FlowsPlan {
  /** Where every flow of the run connects, and the tool it calls. */
  service: FlowService;
  flows: number;
  concurrency: number;
  /** Flow i runs as users[i % users.length]. */
  users: readonly string[];
  /** Each flow's report or issue title is this plus its index. */
  prefix: string;
  /** Called once the broker's window is open, just before the first flow. */
  onStart?: () => void;
}

/**
 * Flows of one user in flight at once: the concurrency shared out. Without a
 * bound a user whose flows finish late would hold more, and the default
 * quota of open flows per user (src/broker/quotas.ts) would refuse the next.
 */
const perUser = (plan: Pick<FlowsPlan, 'concurrency' | 'users'>) => Math.ceil(plan.concurrency / plan.users.length);

export async function runFlows(
  stack: FlowStack,
  tokens: ReadonlyMap<string, string>,
  plan: FlowsPlan,
): Promise<FlowsRun> {
  const ctx: FlowContext = {
    brokerUrl: stack.brokerUrl,
    service: plan.service,
    fetch: stack.fetch,
    tokens,
    gates: createUserGates(),
    forget: async (login) =>
      void (await stack.pool.query(
        'DELETE FROM secrets WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3',
        [stack.dev.idp.issuer, login, plan.service.provider],
      )),
  };
  await stack.broker.openWindow();
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  plan.onStart?.();
  const { results, wallMs } = await driveFlows(ctx, plan);
  const broker = await stack.broker.stats();
  loop.disable();
  return { results, wallMs, broker, benchLoopDelay: loopDelayOf(loop) };
}

/**
 * plan.flows complete flows through `ctx`, plan.concurrency at a time, each user's flows at most
 * their share of the concurrency at once (see perUser); the results in flow order.
 */
export async function driveFlows(
  ctx: FlowContext,
  plan: Omit<FlowsPlan, 'service' | 'onStart'>,
): Promise<{ results: FlowResult[]; wallMs: number }> {
  const results: FlowResult[] = [];
  const pending = Array.from({ length: plan.flows }, (_, index) => index);
  const inFlight = new Map<string, number>();
  const userOf = (index: number) => plan.users[index % plan.users.length]!;
  const waiting: (() => void)[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: plan.concurrency }, async () => {
      while (pending.length > 0) {
        const at = pending.findIndex((index) => (inFlight.get(userOf(index)) ?? 0) < perUser(plan));
        if (at < 0) {
          await new Promise<void>((resolve) => waiting.push(resolve));
          continue;
        }
        const index = pending.splice(at, 1)[0]!;
        const login = userOf(index);
        inFlight.set(login, (inFlight.get(login) ?? 0) + 1);
        results[index] = await runFlow(ctx, index, login, `${plan.prefix}${index}`);
        inFlight.set(login, inFlight.get(login)! - 1);
        for (const wake of waiting.splice(0)) wake();
      }
    }),
  );
  return { results, wallMs: performance.now() - started };
}
