import { createProviderClient } from '../oauth/providerClient.js';
import type { Provider } from '../providers/providerConfig.js';
import type { Fetch } from '../shared/httpClient.js';

export interface ProviderCheck {
  id: string;
  ok: boolean;
  result: string;
}

export const EXPLICIT_ENDPOINTS = 'ok (explicit endpoints, no discovery)';
export const UPSTREAM = 'an upstream MCP server: broker upstreams check resolves it';

/**
 * Loads every provider's endpoints the way a connect flow does, all at once:
 * discovery (OpenID Connect for `oidc`, RFC 8414 for `metadataDiscovery`)
 * through the broker's OAuth client, which also checks the discovered
 * endpoints against the URL policy. Each provider gets `timeoutMs`; a
 * provider with explicit endpoints needs no request.
 */
export function checkProviders(
  providers: readonly Provider[],
  options: { fetch: Fetch; allowLoopback: boolean; timeoutMs: number },
): Promise<ProviderCheck[]> {
  return Promise.all(providers.map((provider) => checkOne(provider, options)));
}

async function checkOne(
  provider: Provider,
  options: { fetch: Fetch; allowLoopback: boolean; timeoutMs: number },
): Promise<ProviderCheck> {
  if (provider.upstream) return { id: provider.id, ok: true, result: UPSTREAM };
  if (provider.kind !== 'oidc' && !provider.metadataDiscovery)
    return { id: provider.id, ok: true, result: EXPLICIT_ENDPOINTS };
  const client = createProviderClient(provider, {
    fetch: options.fetch,
    allowLoopback: options.allowLoopback,
    now: () => new Date(),
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${options.timeoutMs / 1000} s`)), options.timeoutMs);
  });
  try {
    const { scheme, host } = await Promise.race([client.destination(), deadline]);
    return { id: provider.id, ok: true, result: `ok (discovered; authorization endpoint on ${scheme}://${host})` };
  } catch (err) {
    const text = `discovery from ${provider.issuer ?? '(no issuer)'} failed: ${describe(err)}`;
    // Discovery sends no client secret, so no answer should echo it; should one, it is not printed.
    const secret = provider.clientSecret.reveal();
    return { id: provider.id, ok: false, result: secret === '' ? text : text.replaceAll(secret, '[redacted]') };
  } finally {
    clearTimeout(timer);
  }
}

// The broker's errors say what failed in general terms and keep the reason (refused, timed out,
// a bad document) in their causes: an operator needs both.
function describe(err: unknown): string {
  const messages: string[] = [];
  for (let e: unknown = err; e instanceof Error && messages.length < 5; e = e.cause) {
    if (e.message !== '' && !messages.includes(e.message)) messages.push(e.message);
  }
  const [first = String(err), ...causes] = messages;
  return causes.length === 0 ? first : `${first} (${causes.join(': ')})`;
}
