import type { DisconnectDeps } from '../../src/broker/disconnectConnection.js';
import { reportServiceProvider } from '../../src/dev/devStack.js';
import { createProviderClient, type ProviderClient } from '../../src/oauth/providerClient.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { systemClock } from '../../src/shared/clock.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import type { BrokerStack } from './brokerStack.js';
import { capturedLogger } from './capturedLogger.js';
import { secretsBox } from './deadToken.js';
import { TEST_SELF } from './brokerSelf.js';

/** One request a provider was sent, as the broker sent it. */
export interface SentRequest {
  method: string;
  url: string;
  headers: Headers;
  body: string;
}

/** A fetch that notes every request before passing it on (the body as text; the broker sends strings). */
export function recordingFetch(fetch: Fetch, sent: SentRequest[]): Fetch {
  return ((input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    sent.push({
      method: init?.method ?? 'GET',
      url: input instanceof Request ? input.url : String(input),
      headers: new Headers(init?.headers),
      body:
        typeof init?.body === 'string' ? init.body : init?.body instanceof URLSearchParams ? init.body.toString() : '',
    });
    return fetch(input, init);
  }) as Fetch;
}

/**
 * What disconnectConnection needs, over a stack's database and keys, with provider clients of
 * `entries` (default: the stack's Report Service) on `fetch`; `logs` holds what it logged.
 */
export function disconnectDeps(
  stack: BrokerStack,
  fetch: Fetch,
  entries: unknown[] = [reportServiceProvider(stack.dev, stack.secrets)],
): DisconnectDeps & { logs: string[] } {
  const providers = parseProviders(entries, { allowLoopback: true, self: TEST_SELF });
  const { logger, logs } = capturedLogger();
  return {
    logs,
    pool: stack.db.pool,
    box: secretsBox(stack),
    clock: systemClock,
    providers: new Map<string, ProviderClient>(
      providers.map((p) => [p.id, createProviderClient(p, { fetch, allowLoopback: true, now: () => new Date() })]),
    ),
    logger,
  };
}
