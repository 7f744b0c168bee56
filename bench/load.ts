import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CaseName } from './wire.js';

export interface LoadJob {
  url: string;
  caseName: CaseName;
  token: string;
  caPem: string;
  connections: number;
  warmupMs: number;
  durationMs: number;
}

export interface LoadResult {
  /** Completed requests in the measured window (the warm-up is not counted). */
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-200 answers, JSON-RPC errors, tool errors and transport failures. */
  errors: number;
  errorSamples: string[];
  /**
   * CPU time of this process (user + system, all threads) per measured request.
   * The servers run in this process and the load generator does not, so on a
   * busy machine this is steadier than req/s: it counts work, not waiting.
   */
  serverCpuUsPerRequest: number;
  /** With runLoad's `alsoCpu`: that process's CPU time per measured request. */
  otherCpuUsPerRequest?: number;
}

/** What bench/loadWorker.ts measures; the CPU figure is taken on this side. */
export type GeneratorResult = Omit<LoadResult, 'serverCpuUsPerRequest' | 'otherCpuUsPerRequest'>;
type Reply = { measuring: true } | { ok: true; result: GeneratorResult } | { ok: false; error: string };

const workerPath = fileURLToPath(new URL('./loadWorker.ts', import.meta.url));

/**
 * Drives one server with one case from a separate process (bench/loadWorker.ts). `alsoCpu` reads
 * another process's CPU time (a server of the stack running on its own), counted over the same window.
 */
export function runLoad(job: LoadJob, alsoCpu?: () => Promise<NodeJS.CpuUsage>): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    // The parent's execArgv carries tsx's loader, so the child runs the .ts worker too.
    const child = fork(workerPath, [], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let reply: Exclude<Reply, { measuring: true }> | undefined;
    let cpuFrom: NodeJS.CpuUsage | undefined;
    let cpu: NodeJS.CpuUsage | undefined;
    let otherFrom: Promise<NodeJS.CpuUsage> | undefined;
    let otherTo: Promise<NodeJS.CpuUsage> | undefined;
    child.on('message', (message: Reply) => {
      if ('measuring' in message) {
        cpuFrom = process.cpuUsage();
        otherFrom = alsoCpu?.();
      } else {
        cpu = process.cpuUsage(cpuFrom);
        otherTo = alsoCpu?.();
        reply = message;
      }
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!reply?.ok || !cpu)
        return reject(
          new Error(`load generator failed (exit ${code}): ${reply?.ok === false ? reply.error : 'no reply'}`),
        );
      const { result } = reply;
      const perRequest = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / Math.max(1, result.requests);
      void Promise.all([otherFrom, otherTo]).then(
        ([from, to]) =>
          resolve({
            ...result,
            serverCpuUsPerRequest: perRequest(cpu!),
            ...(from &&
              to && {
                otherCpuUsPerRequest: perRequest({ user: to.user - from.user, system: to.system - from.system }),
              }),
          }),
        reject,
      );
    });
    child.send(job);
  });
}
