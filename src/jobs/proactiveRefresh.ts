import { findExpiringConnections } from '../secrets/connectionsRepo.js';
import type { StoredSecret } from '../secrets/secretsRepo.js';
import { refreshAccessToken } from '../secrets/tokenRefresh.js';
import type { TokenVaultDeps } from '../secrets/sealedTokens.js';
import type { Logger } from '../shared/logger.js';

export interface ProactiveRefreshOptions {
  /** Renew access tokens that expire within this much time. */
  horizonMs: number;
  /** Connections looked at per run. */
  batch: number;
  /** Refreshes in flight at once per instance (each is one provider call; no pooled connection is held during it). */
  concurrency: number;
}

/**
 * Tokens expiring within five minutes, looked at every 30 s (with jitter) on every instance: a
 * token lives minutes to hours, so a tool call rarely meets a stale one and waits for its refresh.
 */
export const PROACTIVE_REFRESH: ProactiveRefreshOptions & { intervalMs: number } = {
  intervalMs: 30_000,
  horizonMs: 5 * 60_000,
  batch: 200,
  concurrency: 4,
};

export interface ProactiveRefreshResult {
  refreshed: number;
  /** Renewed meanwhile by a call or another instance (its lease was taken): nothing to do. */
  skipped: number;
  /** The provider refused (or there was nothing to renew with): the connection needs the user. */
  needsReauth: number;
  /** The provider could not be reached: the next run, or the next call, tries again. */
  failed: number;
}

/**
 * One run of the proactive refresh: renews each soon-to-expire connection through the same lease as
 * a tool call's refresh (secrets/tokenRefresh.ts), never waiting for a lease another holds.
 */
export async function refreshExpiring(
  vault: TokenVaultDeps,
  logger: Logger,
  options: ProactiveRefreshOptions,
): Promise<ProactiveRefreshResult> {
  const now = vault.clock.now().getTime();
  const due = await findExpiringConnections(vault.pool, new Date(now + options.horizonMs), options.batch);
  // Instances that read the same list start at different places in it, so their leases rarely collide.
  const start = due.length === 0 ? 0 : Math.floor(Math.random() * due.length);
  const queue = [...due.slice(start), ...due.slice(0, start)];
  const result: ProactiveRefreshResult = { refreshed: 0, skipped: 0, needsReauth: 0, failed: 0 };
  const outlives = (s: StoredSecret | undefined) =>
    s !== undefined && (s.expiresAt === undefined || s.expiresAt.getTime() > now + options.horizonMs);
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      try {
        const done = await refreshAccessToken(vault, next.connectionId, { freshFor: outlives, wait: false });
        if (done.kind === 'token' && done.renewed) result.refreshed++;
        else if (done.kind !== 'reconnect') result.skipped++;
        else result.needsReauth++;
      } catch (err) {
        result.failed++;
        logger.warn({ err, provider: next.provider }, 'proactive refresh failed; retried later');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  return result;
}
