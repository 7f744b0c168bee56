import type { Config } from '../config/config.js';
import type { Pool } from '../db/pool.js';
import { startPeriodic } from '../shared/periodic.js';
import type { Clock } from '../shared/clock.js';
import type { Fetch } from '../shared/httpClient.js';
import type { Logger } from '../shared/logger.js';
import type { WebhookMessage } from './webhookEvent.js';
import { claimDueEvents, giveUpExhausted, markDelivered, markFailed, type ClaimedEvent } from './webhookOutboxRepo.js';
import { signingKeyOf, signWebhook } from '../crypto/webhookSignature.js';

export interface WebhookDeliveryDeps {
  pool: Pool;
  /** The process's fetch (TLS verified against the system roots and TLS_CA_FILE). */
  fetch: Fetch;
  clock: Clock;
  logger: Logger;
  /** WEBHOOK_URL (already through the URL policy) and WEBHOOK_SECRET. */
  webhook: NonNullable<Config['webhook']>;
  /** The jitter's source, in [0, 1). */
  random?: () => number;
}

export interface DeliveryLimits {
  /** Events claimed per pass (each pass posts them side by side). */
  batch?: number;
  /** Attempts per event before it is dead. */
  maxAttempts?: number;
  /** How long one POST may take, answer included. */
  timeoutMs?: number;
  /** The wait after the first failure; it doubles with each failure, up to maxDelayMs, then jitters. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

// Twelve attempts over about three and a half hours (10 s doubling, at most an hour apart) ride out a
// receiver's restart or a short outage; a longer one leaves dead events for an operator to see (/ops).
export const DEFAULT_DELIVERY_LIMITS: Required<DeliveryLimits> = {
  batch: 20,
  maxAttempts: 12,
  timeoutMs: 10_000,
  baseDelayMs: 10_000,
  maxDelayMs: 3_600_000,
};
/** A claim outlives the POST's timeout by this much before another instance may take the event. */
const LEASE_MARGIN_MS = 30_000;

export interface DeliveryPass {
  claimed: number;
  delivered: number;
  failed: number;
  dead: number;
}

/**
 * The wait before attempt `failed + 1`: `baseDelayMs` doubled per failure up to `maxDelayMs`, then
 * spread over its upper half, so receivers coming back from an outage are not hit by every
 * instance's retries at once, and no retry comes sooner than half its step.
 */
export function retryDelayMs(failed: number, limits: Required<DeliveryLimits>, random: () => number): number {
  const step = Math.min(limits.maxDelayMs, limits.baseDelayMs * 2 ** (failed - 1));
  return Math.round(step * (0.5 + random() * 0.5));
}

/**
 * One pass, safe on every instance at once: claims a bounded batch of due events (a short statement
 * that counts the attempt and leases the row), posts each with no row lock or pooled connection held,
 * then records each outcome in a statement of its own: delivered, due again after a backoff, or dead
 * once the attempts are spent. Delivery is at least once: a lease that ran out mid-POST sends the
 * event again, with the same Webhook-Id, for the receiver to dedupe.
 */
export async function deliverDueEvents(deps: WebhookDeliveryDeps, limits: DeliveryLimits = {}): Promise<DeliveryPass> {
  const bounds = { ...DEFAULT_DELIVERY_LIMITS, ...limits };
  const now = deps.clock.now();
  const abandoned = await giveUpExhausted(deps.pool, now, bounds.maxAttempts);
  const leaseUntil = new Date(now.getTime() + bounds.timeoutMs + LEASE_MARGIN_MS);
  const claimed = await claimDueEvents(deps.pool, now, leaseUntil, bounds.batch, bounds.maxAttempts);
  const outcomes = await Promise.all(claimed.map((event) => deliverOne(deps, bounds, event)));
  return {
    claimed: claimed.length,
    delivered: outcomes.filter((o) => o === 'delivered').length,
    failed: outcomes.filter((o) => o === 'failed').length,
    dead: abandoned + outcomes.filter((o) => o === 'dead').length,
  };
}

async function deliverOne(
  deps: WebhookDeliveryDeps,
  limits: Required<DeliveryLimits>,
  { message, attempt }: ClaimedEvent,
): Promise<'delivered' | 'failed' | 'dead' | 'superseded'> {
  const refused = await post(deps, message, limits.timeoutMs);
  const now = deps.clock.now();
  const log = { eventId: message.id, type: message.type, attempt };
  if (refused === undefined)
    return (await markDelivered(deps.pool, message.id, attempt, now)) ? 'delivered' : 'superseded';
  if (attempt >= limits.maxAttempts) {
    deps.logger.error({ ...log, error: refused }, 'webhook event given up after its last attempt; see /ops');
    return (await markFailed(deps.pool, message.id, attempt, refused, undefined)) ? 'dead' : 'superseded';
  }
  const retryAt = new Date(now.getTime() + retryDelayMs(attempt, limits, deps.random ?? Math.random));
  deps.logger.warn(
    { ...log, error: refused, retryAt: retryAt.toISOString() },
    'webhook delivery failed; retried later',
  );
  return (await markFailed(deps.pool, message.id, attempt, refused, retryAt)) ? 'failed' : 'superseded';
}

/** Posts one attempt; undefined when the receiver accepted it (2xx), else why not (never its body). */
async function post(
  deps: WebhookDeliveryDeps,
  message: WebhookMessage,
  timeoutMs: number,
): Promise<string | undefined> {
  const body = JSON.stringify(message);
  const timestamp = Math.floor(deps.clock.now().getTime() / 1000);
  // Config refused a secret without a key (config.ts), so there is one here. During a rotation the
  // previous secret signs too: Standard Webhooks receivers accept any one of the space-separated signatures.
  const keys = [deps.webhook.secret, deps.webhook.previousSecret].flatMap((s) =>
    s ? [signingKeyOf(s.reveal())!] : [],
  );
  try {
    const response = await deps.fetch(deps.webhook.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': message.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': keys.map((key) => signWebhook(key, message.id, timestamp, body)).join(' '),
      },
      body,
      // A redirect is a failure, not followed: the event goes only to the URL that passed the policy.
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel().catch(() => undefined);
    if (response.status >= 200 && response.status < 300) return undefined;
    if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400))
      return `redirect (${response.status}) not followed`;
    return `HTTP ${response.status}`;
  } catch (err) {
    if (err instanceof Error && err.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`;
    const code = (err as { cause?: { code?: unknown } }).cause?.code;
    return typeof code === 'string' ? `network error (${code})` : 'network error';
  }
}

/** Passes until one claims less than a full batch: a backlog drains at once, not a batch per poll. */
export async function deliverBacklog(deps: WebhookDeliveryDeps, limits: DeliveryLimits = {}): Promise<void> {
  const batch = limits.batch ?? DEFAULT_DELIVERY_LIMITS.batch;
  for (;;) {
    const pass = await deliverDueEvents(deps, limits);
    if (pass.claimed < batch) return;
  }
}

/** Delivers every `pollMs` (jittered, one pass at a time) on this instance until stopped. */
export function startWebhookDelivery(
  deps: WebhookDeliveryDeps,
  options: { pollMs?: number; limits?: DeliveryLimits } = {},
): { stop(): Promise<void> } {
  return startPeriodic(
    () => deliverBacklog(deps, options.limits),
    options.pollMs ?? 2_000,
    deps.logger,
    'webhook delivery',
  );
}
