/**
 * A second stop signal means "exit now" only when it comes this long after the
 * first. Ctrl-C in a terminal signals the whole foreground process group, so
 * under `npm start` (or any wrapper that forwards signals, such as the tsx CLI)
 * the broker can get SIGINT from the terminal and again, within milliseconds,
 * from the wrapper: those copies are one request to stop, not two.
 */
export const FORCE_AFTER_MS = 1_000;

export interface StopSignalHandlers {
  /** The first signal: stop gracefully. */
  stop(signal: NodeJS.Signals): void;
  /** A signal after the pause: the person at the terminal insists. */
  force(signal: NodeJS.Signals): void;
  /** A copy of the first signal that arrived within the pause. */
  repeated(signal: NodeJS.Signals): void;
}

/** Decides what each stop signal means; `now` is injectable for the unit test. */
export function stopSignalHandler(
  handlers: StopSignalHandlers,
  now: () => number = Date.now,
  forceAfterMs = FORCE_AFTER_MS,
): (signal: NodeJS.Signals) => void {
  let firstAt: number | undefined;
  return (signal) => {
    if (firstAt === undefined) {
      firstAt = now();
      handlers.stop(signal);
    } else if (now() - firstAt > forceAfterMs) {
      handlers.force(signal);
    } else {
      handlers.repeated(signal);
    }
  };
}
