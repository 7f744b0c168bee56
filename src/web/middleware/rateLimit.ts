import type { IncomingMessage } from 'node:http';
import { isIPv6 } from 'node:net';
import type { RequestHandler } from 'express';
import { RateLimitedError } from '../../errors/appError.js';
import type { Logger } from '../../shared/logger.js';
import type { RateLimit } from '../../config/limits.js';

// Enough distinct addresses for a busy instance; past it the least recently seen is forgotten
// (it starts again with a full bucket), so memory stays bounded whatever the traffic.
const MAX_ADDRESSES = 10_000;

export interface RateLimitDeps {
  /** The client's address (shared/clientAddress.ts: the peer's, or a trusted proxy's X-Forwarded-For entry). */
  addressOf: (req: IncomingMessage) => string;
  now?: () => number;
  /** Told once each time an address runs out, not on every refused request. */
  logger?: Logger;
}

/**
 * A token bucket per client address, in this process only: each instance
 * limits on its own, so N instances behind a balancer allow N times the rate.
 * IPv6 addresses count by their /64, which one host can fill on its own. A
 * refusal is a 429 with Retry-After, through the one error mapping.
 */
export function rateLimitByAddress(limit: RateLimit, deps: RateLimitDeps): RequestHandler {
  const { addressOf, now = Date.now, logger } = deps;
  const buckets = new Map<string, { tokens: number; at: number; refused?: boolean }>();
  const perMs = limit.perMinute / 60_000;
  return (req, _res, next) => {
    const clientAddress = addressOf(req);
    const key = addressKey(clientAddress);
    const t = now();
    const previous = buckets.get(key);
    // A clock that steps back (NTP, a test's clock) refills nothing rather than draining the bucket.
    const tokens = previous
      ? Math.min(limit.burst, previous.tokens + Math.max(0, t - previous.at) * perMs)
      : limit.burst;
    buckets.delete(key);
    if (tokens < 1) {
      if (!previous?.refused) logger?.warn({ clientAddress, bucket: key }, 'sign-in rate limit reached');
      buckets.set(key, { tokens, at: t, refused: true });
      next(
        new RateLimitedError(
          'Too many sign-in requests from your address. Wait a moment, then try again.',
          (1 - tokens) / perMs / 1000,
        ),
      );
      return;
    }
    buckets.set(key, { tokens: tokens - 1, at: t });
    if (buckets.size > MAX_ADDRESSES) buckets.delete(buckets.keys().next().value!);
    next();
  };
}

function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
