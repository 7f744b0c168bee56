import type { Logger } from './logger.js';

/**
 * Runs `run` every `intervalMs`, each wait jittered by ±25% so that instances started together
 * spread out, one run at a time, until stopped; stop() waits for a run in progress. A failed run
 * is logged and the next one tries again.
 */
export function startPeriodic(
  run: () => Promise<unknown>,
  intervalMs: number,
  logger: Logger,
  what: string,
): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        running = run()
          .catch((err: unknown) => logger.warn({ err }, `${what} failed; the next one retries`))
          .finally(schedule);
      },
      intervalMs * (0.75 + Math.random() * 0.5),
    );
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
