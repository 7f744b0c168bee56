import type { BrokerDeps } from '../../src/broker/brokerDeps.js';
import { buildBrokerDeps } from '../../src/buildBrokerDeps.js';
import { startNavigation, type NavigationRequest } from '../../src/broker/startNavigation.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { systemClock } from '../../src/shared/clock.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { randomToken } from '../../src/shared/tokens.js';
import type { BrokerStack } from './brokerStack.js';
import { consentAndAuthorize, openConnectLink } from './connectFlow.js';
import { atUrl, stackSettings } from './testSettings.js';

/**
 * An instance of the broker on the stack's database and origin, built as the server builds its own
 * (src/server.ts): `entries` parsed as main.ts parses PROVIDERS_FILE, against the stack's origin
 * and identity provider. A new one is a restart: it discovers each upstream again.
 */
export function upstreamBroker(
  stack: BrokerStack,
  entries: unknown[],
  options: { readEnv?: (name: string) => string | undefined; fetch?: Fetch } = {},
): BrokerDeps {
  return buildBrokerDeps({
    pool: stack.db.pool,
    clock: systemClock,
    logger: createLogger({ level: 'silent' }),
    fetch: options.fetch ?? stack.fetch,
    secretKeys: stack.secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
    providers: parseProviders(entries, {
      allowLoopback: true,
      self: { publicUrl: new URL(stack.brokerUrl), issuer: stack.dev.idp.issuer },
      ...(options.readEnv && { readEnv: options.readEnv }),
    }),
    allowLoopback: true,
    issuer: stack.dev.idp.issuer,
    settings: atUrl(stackSettings({}), new URL(stack.brokerUrl)),
  });
}

/** `login` connects `provider` through the broker's pages, from a flow `deps` starts; returns the flow and the last page. */
export async function connectUpstream(stack: BrokerStack, deps: BrokerDeps, provider: string, login = 'alice') {
  const start: NavigationRequest = {
    principal: { iss: stack.dev.idp.issuer, sub: login },
    clientId: undefined,
    tool: `${provider}_whoami`,
    requestDigest: randomToken(),
    provider,
    purpose: 'read your notes',
    lineage: 'mrtr',
  };
  const { navigation, connectUrl } = await startNavigation(deps, start);
  const done = await consentAndAuthorize(stack, await openConnectLink(stack, connectUrl, login), login);
  return { navigation, done };
}
