import type { Provider } from './providerConfig.js';

/**
 * The hosts a deployment's providers are configured on (issuer, endpoints,
 * API base): the domains the URL classifier protects beside its shipped list,
 * so a lookalike of an operator's own provider is refused too.
 */
export function providerHosts(providers: readonly Provider[]): string[] {
  const urls = providers.flatMap((p) => [
    p.issuer,
    p.authorizationEndpoint,
    p.tokenEndpoint,
    p.apiBase,
    p.revocationEndpoint,
    p.identity.from === 'call' ? p.identity.url : undefined,
  ]);
  return [
    ...new Set(urls.filter((u): u is string => u !== undefined && URL.canParse(u)).map((u) => new URL(u).hostname)),
  ];
}
