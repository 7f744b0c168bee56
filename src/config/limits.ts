// The shapes and defaults of the limits the configuration sets, here so that config.ts imports no
// module that reads its settings: the broker's quotas, the legacy sessions' limits and the sign-in
// rate limit, each enforced where it is used (src/broker/quotas.ts, src/mcp/legacy/legacySessions.ts,
// src/web/middleware/rateLimit.ts).

/**
 * What one principal may ask of the broker (configuration: QUOTA_*). New
 * flows and open flows are counted in Postgres, so the limits hold across
 * instances; concurrent waits are counted per instance (a wait holds this
 * process's resources, not the cluster's).
 */
export interface Quotas {
  /** New connect flows a principal may start per rolling hour. */
  navigationsPerHour: number;
  /** Flows a principal may have open at once for one provider. */
  openPerProvider: number;
  /** Calls of one principal that may wait at once (for a connection, an approval, another call's outcome) on one instance. */
  waitsPerPrincipal: number;
  /** Refusals recorded in the ledger per flow; past it a refusal is still refused and logged, not written. */
  refusalsPerFlow: number;
}

export const DEFAULT_QUOTAS: Quotas = {
  navigationsPerHour: 60,
  openPerProvider: 5,
  waitsPerPrincipal: 8,
  refusalsPerFlow: 20,
};

/** LEGACY_* settings: how many sessions, for how long, and what each may hold open. */
export interface LegacyLimits {
  maxSessions: number;
  maxSessionsPerPrincipal: number;
  /** A session with no request for this long is ended by the idle sweep. */
  idleMs: number;
  /** A comment line on every open SSE stream this often, so proxies and clients see it is alive. */
  heartbeatMs: number;
  /** The standalone GET stream is closed after this long; the client opens another (2025-11-25 allows it). */
  streamMaxMs: number;
  /** -32042 completion watchers per session; past it the oldest stops. */
  watchersPerSession: number;
}

/** A token bucket per client address (LOGIN_RATE_*). */
export interface RateLimit {
  /** Requests an address may make at once before it is slowed down. */
  burst: number;
  /** Tokens an address gets back per minute. */
  perMinute: number;
}
