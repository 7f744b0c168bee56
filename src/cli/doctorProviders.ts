import type { Config } from '../config/config.js';
import { failureDetail } from '../oauth/oauthErrors.js';
import { parseProviders, ProviderConfigError, type Provider } from '../providers/providerConfig.js';
import { readProvidersFile } from '../providers/providersFile.js';
import type { Fetch } from '../shared/httpClient.js';
import { discoverUpstream } from '../upstream/discovery.js';
import type { BrokerSelf } from '../providers/selfReference.js';
import { fail, ok, reasonOf, type Finding } from './doctorFinding.js';
import { checkProviders } from './providerCheck.js';

const TIMEOUT_MS = 10_000;

/**
 * PROVIDERS_FILE as start-up reads it (every problem of the file), then each provider's
 * discovery as `broker providers check` runs it, and each upstream MCP server's 401 challenge,
 * Protected Resource Metadata and authorization server metadata as `broker upstreams check` does,
 * but registering no client: the doctor writes nothing.
 */
export async function checkProvidersFile(
  settings: Pick<Config['broker'], 'providersFile' | 'providerSecret'>,
  options: { fetch: Fetch; allowLoopback: boolean; self: BrokerSelf },
): Promise<Finding[]> {
  if (!settings.providersFile) return [ok('PROVIDERS_FILE', 'not set: no third-party providers')];
  let providers: Provider[];
  try {
    const entries = await readProvidersFile(settings.providersFile);
    providers = parseProviders(entries, {
      allowLoopback: options.allowLoopback,
      readEnv: settings.providerSecret,
      self: options.self,
    });
  } catch (err) {
    if (!(err instanceof ProviderConfigError))
      return [fail('PROVIDERS_FILE', `${settings.providersFile}: ${reasonOf(err)}`)];
    return err.message
      .split('\n')
      .map((line) => line.replace(/^\s*-\s*/, '').trim())
      .filter((line) => line !== '' && !/^Invalid provider configuration:?$/.test(line))
      .map((line) => fail('PROVIDERS_FILE', line));
  }
  const findings: Finding[] = [
    ok('PROVIDERS_FILE', `${settings.providersFile}: ${providers.length} provider${providers.length === 1 ? '' : 's'}`),
  ];
  const checks = await checkProviders(
    providers.filter((p) => !p.upstream),
    { ...options, timeoutMs: TIMEOUT_MS },
  );
  for (const check of checks) findings.push((check.ok ? ok : fail)(`provider ${check.id}`, check.result));
  const upstreams = await Promise.all(
    providers.flatMap((p) =>
      p.upstream
        ? [
            discoverUpstream(p.id, p.upstream, { ...options, timeoutMs: TIMEOUT_MS }, { self: options.self }).then(
              (found) =>
                ok(
                  `upstream ${p.id}`,
                  `${p.upstream!.url}: protected resource metadata at ${found.resourceMetadataUrl}, authorization server ${found.authorizationServer.issuer}`,
                ),
              (err: unknown) => {
                const cause = err instanceof Error && err.cause !== undefined ? ` (${failureDetail(err.cause)})` : '';
                return fail(`upstream ${p.id}`, `${reasonOf(err).replace(/^Upstream [^:]+: /, '')}${cause}`);
              },
            ),
          ]
        : [],
    ),
  );
  return [...findings, ...upstreams];
}
