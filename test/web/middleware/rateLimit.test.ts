import type { Request, Response } from 'express';
import { describe, expect, it } from 'vitest';
import { RateLimitedError } from '../../../src/errors/appError.js';
import { rateLimitByAddress } from '../../../src/web/middleware/rateLimit.js';
import { capturedLogger } from '../../support/capturedLogger.js';

function limiter(burst: number, perMinute: number) {
  let now = 1_000_000;
  const { logger, logs } = capturedLogger();
  const handler = rateLimitByAddress(
    { burst, perMinute },
    { addressOf: (req) => req.socket.remoteAddress!, now: () => now, logger },
  );
  const hit = (remoteAddress: string): unknown => {
    let outcome: unknown = 'passed';
    handler({ socket: { remoteAddress } } as unknown as Request, {} as Response, (err?: unknown) => {
      if (err) outcome = err;
    });
    return outcome;
  };
  return { hit, advance: (ms: number) => (now += ms), logs };
}

describe('rateLimitByAddress', () => {
  it('lets a burst through, then refuses with the wait until the next token', () => {
    const { hit, advance } = limiter(3, 60);
    expect([hit('192.0.2.1'), hit('192.0.2.1'), hit('192.0.2.1')]).toEqual(['passed', 'passed', 'passed']);
    const refused = hit('192.0.2.1');
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(1);
    expect(hit('192.0.2.2')).toBe('passed');
    advance(1_000);
    expect(hit('192.0.2.1')).toBe('passed');
  });

  it('does not drain a bucket when the clock steps back', () => {
    const { hit, advance } = limiter(2, 60);
    hit('192.0.2.1');
    advance(-3_600_000);
    expect(hit('192.0.2.1')).toBe('passed');
  });

  it('counts IPv6 addresses by their /64 and IPv4-mapped addresses as IPv4', () => {
    const { hit } = limiter(1, 1);
    expect(hit('2001:db8:1:2::1')).toBe('passed');
    expect(hit('2001:0db8:0001:0002:ffff::9')).toBeInstanceOf(RateLimitedError);
    expect(hit('2001:db8:1:3::1')).toBe('passed');
    expect(hit('::ffff:192.0.2.7')).toBe('passed');
    expect(hit('192.0.2.7')).toBeInstanceOf(RateLimitedError);
  });

  it('logs an address once each time it runs out, not on every refused request', () => {
    const { hit, advance, logs } = limiter(1, 60);
    hit('192.0.2.1');
    hit('192.0.2.1');
    hit('192.0.2.1');
    advance(1_000);
    hit('192.0.2.1');
    hit('192.0.2.1');
    const lines = logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'sign-in rate limit reached', clientAddress: '192.0.2.1' }),
      expect.objectContaining({ msg: 'sign-in rate limit reached', clientAddress: '192.0.2.1' }),
    ]);
  });
});
