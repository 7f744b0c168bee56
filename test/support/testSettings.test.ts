import { describe, expect, it } from 'vitest';
import type { ServerSettings } from '../../src/server.js';
import { defaultSettings, stackSettings } from './testSettings.js';

// A broker stack hard-coding a value loadConfig also parses would drift from the deployment's
// default the day the schema changes it; the stack may differ only where it says so.

/** The settings without the one function among them (a fresh closure per loadConfig). */
function comparable(settings: ServerSettings) {
  const { providerSecret: _, ...broker } = settings.broker;
  return { ...settings, broker };
}

describe('the test stack settings', () => {
  it("are loadConfig's defaults but for the five values the stack names", () => {
    const defaults = defaultSettings();
    const stack = stackSettings({});
    const named = {
      session: { ...stack.session, ttlSeconds: defaults.session.ttlSeconds },
      broker: { ...stack.broker, retryWaitMs: defaults.broker.retryWaitMs },
      legacy: { ...stack.legacy, waitMs: defaults.legacy.waitMs },
      login: { ...stack.login, rateLimit: defaults.login.rateLimit },
      metrics: { ...stack.metrics, openWithoutToken: defaults.metrics.openWithoutToken },
    };
    expect(comparable({ ...stack, ...named })).toEqual(comparable(defaults));
  });

  it('put each option on its slice and keep the defaults of the fields it leaves', () => {
    const defaults = defaultSettings();
    const stack = stackSettings({
      retryWaitMs: 300,
      legacyUrlElicitation: 'error',
      legacyLimits: { idleMs: 50 },
      quotas: { openPerProvider: 1 },
      anonymous: true,
      metricsToken: 'metrics-token-canary-0123456789abcdef',
      highRiskTools: ['reports_create'],
    });
    expect(stack.broker.retryWaitMs).toBe(300);
    expect(stack.broker.navigationTtlSeconds).toBe(defaults.broker.navigationTtlSeconds);
    expect(stack.legacy.urlElicitation).toBe('error');
    expect(stack.legacy.limits).toEqual({ ...defaults.legacy.limits, idleMs: 50 });
    expect(stack.quotas).toEqual({ ...defaults.quotas, openPerProvider: 1 });
    expect(stack.mcp).toEqual({ ...defaults.mcp, allowAnonymous: true });
    expect(stack.metrics.token?.reveal()).toBe('metrics-token-canary-0123456789abcdef');
    expect(stack.highRiskTools).toEqual(['reports_create']);
  });
});
