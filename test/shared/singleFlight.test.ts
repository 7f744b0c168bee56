import { describe, expect, it } from 'vitest';
import { singleFlight } from '../../src/shared/singleFlight.js';

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('singleFlight', () => {
  it('shares one run between concurrent callers', async () => {
    let runs = 0;
    const gate = deferred<number>();
    const flight = singleFlight(
      () => {
        runs++;
        return gate.promise;
      },
      { keepResult: false },
    );
    const [a, b] = [flight(), flight()];
    expect(a).toBe(b);
    gate.resolve(7);
    expect(await Promise.all([a, b])).toEqual([7, 7]);
    expect(runs).toBe(1);
  });

  it('keeps a result when asked, and forgets it otherwise', async () => {
    let runs = 0;
    const kept = singleFlight(async () => ++runs, { keepResult: true });
    expect([await kept(), await kept()]).toEqual([1, 1]);
    let fresh = 0;
    const each = singleFlight(async () => ++fresh, { keepResult: false });
    expect([await each(), await each()]).toEqual([1, 2]);
  });

  it('never keeps a failure: the next call tries again, also when the work throws at once', async () => {
    let runs = 0;
    const flight = singleFlight(
      async () => {
        if (++runs === 1) throw new Error('first fails');
        return runs;
      },
      { keepResult: true },
    );
    await expect(flight()).rejects.toThrow('first fails');
    expect(await flight()).toBe(2);
    const sync = singleFlight<number>(
      () => {
        throw new Error('at once');
      },
      { keepResult: true },
    );
    await expect(sync()).rejects.toThrow('at once');
  });

  it('reset forgets a kept result', async () => {
    let runs = 0;
    const flight = singleFlight(async () => ++runs, { keepResult: true });
    await flight();
    flight.reset();
    expect(await flight()).toBe(2);
  });
});
