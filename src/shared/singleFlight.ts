/** A shared run of some work: every caller while it runs gets the same promise. */
export interface SingleFlight<T> {
  (): Promise<T>;
  /** Forgets the kept result or the run in flight: the next call starts the work again. */
  reset(): void;
}

/**
 * One run of `work` at a time, shared by every caller. A failed run is never
 * kept, so the next call tries again; a successful one is kept for every later
 * call when `keepResult` (discovery, a connection), or forgotten once it
 * settles otherwise (a read that must be fresh each time, but not twice at once).
 */
export function singleFlight<T>(work: () => Promise<T>, options: { keepResult: boolean }): SingleFlight<T> {
  let current: Promise<T> | undefined;
  const forget = (run: Promise<T>) => {
    if (current === run) current = undefined;
  };
  const flight = (() => {
    if (current) return current;
    const run = (async () => work())();
    current = run;
    run.then(
      () => {
        if (!options.keepResult) forget(run);
      },
      () => forget(run),
    );
    return run;
  }) as SingleFlight<T>;
  flight.reset = () => {
    current = undefined;
  };
  return flight;
}
