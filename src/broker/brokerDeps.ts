import type { Config } from '../config/config.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Pool } from '../db/pool.js';
import type { ProviderClient } from '../oauth/providerClient.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { CompletionSignal } from './completionSignal.js';
import type { WaitGate } from './quotas.js';

/**
 * The broker slice of the configuration (config/config.ts) as the use cases read it, less what only
 * main.ts reads (the providers file, the deadlines its fetches are built with) and the sweeper (its
 * interval): a new setting there reaches them.
 */
export type BrokerSettings = Omit<
  Config['broker'],
  'providersFile' | 'providerSecret' | 'sweepIntervalMs' | 'upstreamTimeoutMs' | 'providerTimeoutMs'
>;

/** What the connection broker's use cases need; built once in server.ts. */
export interface BrokerDeps extends BrokerSettings {
  pool: Pool;
  clock: Clock;
  logger: Logger;
  providers: ReadonlyMap<string, ProviderClient>;
  /** Seals tokens and PKCE verifiers at rest. */
  box: SecretBox;
  signal: CompletionSignal;
  publicUrl: URL;
  /** Development: loopback URLs pass the URL policy. */
  allowLoopback: boolean;
  /** Tools whose verified operations wait for an operator's approval (HIGH_RISK_TOOLS). */
  highRiskTools: ReadonlySet<string>;
  /** Per-principal limits (QUOTA_*). */
  quotas: Config['quotas'];
  /** Counts each principal's waiting calls on this instance against quotas.waitsPerPrincipal. */
  waits: WaitGate;
}

/**
 * Each provider has its own redirect URI, so an authorization response is
 * only ever redeemed at the token endpoint of the provider it came back for
 * (RFC 9700 §4.4.2, distinct redirect URIs against mix-up).
 */
export const CALLBACK_ROUTE = '/oauth/callback/:provider';
export const callbackPathFor = (providerId: string): string => `/oauth/callback/${providerId}`;
export const DONE_PATH = '/connect/done';

/** A provider as users are shown it: its display name, or its id when it is not configured (any more). */
export const providerNameOf = (broker: Pick<BrokerDeps, 'providers'>, providerId: string): string =>
  broker.providers.get(providerId)?.provider.displayName ?? providerId;
