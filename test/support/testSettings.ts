import { loadConfig } from '../../src/config/config.js';
import type { ServerSettings } from '../../src/server.js';
import { Secret } from '../../src/shared/secret.js';
import type { BrokerStackOptions } from './brokerStack.js';
import type { RateLimit } from '../../src/config/limits.js';

// The settings of the brokers that tests and benches build: what loadConfig makes of a test
// environment, so every default, and every setting added later, is the one a deployment gets
// without a stack repeating it. A stack changes fields on the parsed slices, in the slices' own
// units: tests ask for values the environment schema refuses (legacy limits of a few milliseconds).

/**
 * loadConfig's parse of an environment that sets nothing but NODE_ENV=test. The benches pass the
 * loadConfig of the code form they build a broker from (bench/brokerModules.ts).
 */
export function defaultSettings(load: typeof loadConfig = loadConfig): ServerSettings {
  return load({ NODE_ENV: 'test' });
}

/** The settings of one instance served at `publicUrl` (a port-0 listener's), whose MCP audience is `mcpResourceUrl`. */
export function atUrl(
  settings: ServerSettings,
  publicUrl: URL,
  mcpResourceUrl = new URL('/mcp', publicUrl).href,
): ServerSettings {
  return { ...settings, http: { ...settings.http, publicUrl, mcpResourceUrl } };
}

/**
 * A sign-in bucket no test or bench exhausts: every simulated browser signs in from 127.0.0.1,
 * dozens within seconds (test/auth/loginFlood.int.test.ts proves the default one).
 */
export const MANY_SIGN_INS: RateLimit = { burst: 100_000, perMinute: 100_000 };

/** The test stack's values where they differ from the defaults: quick retries and legacy waits, short sessions. */
const STACK_VALUES = { sessionTtlSeconds: 3600, retryWaitMs: 2_000, legacyWaitMs: 10_000 } as const;

/** test/support/brokerStack.ts's options, on the slices they set (both instances alike; `http` is each one's). */
export function stackSettings(options: BrokerStackOptions): ServerSettings {
  const defaults = defaultSettings();
  return {
    ...defaults,
    session: { ...defaults.session, ttlSeconds: options.sessionTtlSeconds ?? STACK_VALUES.sessionTtlSeconds },
    mcp: { ...defaults.mcp, allowAnonymous: options.anonymous ?? defaults.mcp.allowAnonymous, ...options.mcp },
    broker: {
      ...defaults.broker,
      navigationTtlSeconds: options.navigationTtlSeconds ?? defaults.broker.navigationTtlSeconds,
      retryWaitMs: options.retryWaitMs ?? STACK_VALUES.retryWaitMs,
      upstreamTimeoutMs: options.upstreamTimeoutMs ?? defaults.broker.upstreamTimeoutMs,
    },
    legacy: {
      ...defaults.legacy,
      urlElicitation: options.legacyUrlElicitation ?? defaults.legacy.urlElicitation,
      waitMs: options.legacyWaitMs ?? STACK_VALUES.legacyWaitMs,
      limits: { ...defaults.legacy.limits, ...options.legacyLimits },
    },
    login: { ...defaults.login, rateLimit: options.loginRateLimit ?? MANY_SIGN_INS },
    highRiskTools: options.highRiskTools ?? defaults.highRiskTools,
    webhook: options.webhook ?? defaults.webhook,
    quotas: { ...defaults.quotas, ...options.quotas },
    // Closed without a token, as in production: the tests of /metrics give one.
    metrics: {
      token: options.metricsToken === undefined ? defaults.metrics.token : new Secret(options.metricsToken),
      openWithoutToken: false,
    },
  };
}
