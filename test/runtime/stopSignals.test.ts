import { describe, expect, it } from 'vitest';
import { FORCE_AFTER_MS, stopSignalHandler } from '../../src/runtime/stopSignals.js';

describe('stopSignalHandler', () => {
  const record = () => {
    const seen: string[] = [];
    let now = 1_000_000;
    const handle = stopSignalHandler(
      {
        stop: (s) => seen.push(`stop ${s}`),
        force: (s) => seen.push(`force ${s}`),
        repeated: (s) => seen.push(`repeated ${s}`),
      },
      () => now,
    );
    return { seen, handle, advance: (ms: number) => (now += ms) };
  };

  it('takes copies of one Ctrl-C arriving within milliseconds (terminal, npm, tsx) as one request to stop', () => {
    const { seen, handle, advance } = record();
    handle('SIGINT');
    advance(3);
    handle('SIGINT');
    advance(30);
    handle('SIGTERM');
    advance(FORCE_AFTER_MS - 33);
    handle('SIGINT');
    expect(seen).toEqual(['stop SIGINT', 'repeated SIGINT', 'repeated SIGTERM', 'repeated SIGINT']);
  });

  it('exits now on a signal that comes after the pause', () => {
    const { seen, handle, advance } = record();
    handle('SIGTERM');
    advance(FORCE_AFTER_MS + 1);
    handle('SIGINT');
    expect(seen).toEqual(['stop SIGTERM', 'force SIGINT']);
  });
});
