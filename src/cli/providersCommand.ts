import { parseArgs } from 'node:util';
import { callbackPathFor } from '../broker/brokerDeps.js';
import type { Config } from '../config/config.js';
import { ProviderConfigError, type Provider } from '../providers/providerConfig.js';
import { configuredProviders } from '../providers/providersFile.js';
import { createEgressGuard } from '../shared/egressGuard.js';
import { createFetch } from '../shared/httpClient.js';
import { deploymentCas, deploymentProviderSources, deploymentSelf } from './deployment.js';
import { checkProviders } from './providerCheck.js';
import { formatTable } from './table.js';
import { CliError } from './cliError.js';

export class ProvidersCommandError extends CliError {}

const CHECK_TIMEOUT_MS = 10_000;

const usage = `Usage: broker providers <command> [--json]

Reads PROVIDERS_FILE (YAML or JSON) as start-up does; a file with problems lists every one (exit 1).

  list    Each provider: id, name, catalog entry, custom or development (added by npm start), kind,
          the callback URL to register at the provider, and the scopes it asks for. No network access.
  check   Loads each provider's endpoints: discovers those of oidc and metadataDiscovery entries
          (concurrently, at most ${CHECK_TIMEOUT_MS / 1000} s each); exit 1 unless every provider is ok.
`;

const DEV_NOTE =
  'Development mode: the development providers npm start adds (the Report Service, a GitHub-like provider, the memo upstream) are listed as development once it has run; check checks PROVIDERS_FILE only.';

/** `broker providers …`: returns the process exit code. Notes go to `note` (stderr), so --json output stays JSON. */
export async function providersCommand(
  args: string[],
  config: Readonly<Config>,
  out: (line: string) => void,
  note: (line: string) => void,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'list' && sub !== 'check') throw new ProvidersCommandError(usage);
  const { values } = parseArgs({ args: rest, strict: true, options: { json: { type: 'boolean', default: false } } });
  const dev = config.mode !== 'production';
  if (dev) note(DEV_NOTE);
  const listed =
    sub === 'list'
      ? await providerSources(config)
      : (await loadProviders(config)).map((provider) => ({ provider, development: false }));
  const providers = listed.map((l) => l.provider);
  if (providers.length === 0 && !values.json)
    out(
      config.broker.providersFile
        ? `No providers in ${config.broker.providersFile}.`
        : 'No providers: PROVIDERS_FILE is not set.',
    );

  if (sub === 'list') {
    const rows = listed.map(({ provider: p, development }) => ({
      id: p.id,
      displayName: p.displayName,
      source: development ? 'development' : p.catalog === undefined ? 'custom' : `catalog:${p.catalog}`,
      kind: p.kind,
      callbackUrl: new URL(callbackPathFor(p.id), config.http.publicUrl).href,
      scopes: p.scopes,
    }));
    if (values.json) out(JSON.stringify(rows));
    else if (rows.length > 0)
      out(
        formatTable(
          ['id', 'name', 'source', 'kind', 'callback URL', 'scopes'],
          rows.map((r) => [r.id, r.displayName, r.source, r.kind, r.callbackUrl, r.scopes.join(' ') || '(none)']),
        ),
      );
    return 0;
  }

  const checks = await checkProviders(providers, {
    fetch: createFetch({
      extraCaPems: await deploymentCas(config),
      timeoutMs: CHECK_TIMEOUT_MS,
      egress: createEgressGuard({ allow: config.egress.allow }),
    }),
    allowLoopback: dev,
    timeoutMs: CHECK_TIMEOUT_MS,
  });
  if (values.json) out(JSON.stringify(checks));
  else if (checks.length > 0)
    out(
      formatTable(
        ['id', 'result'],
        checks.map((c) => [c.id, c.result]),
      ),
    );
  return checks.every((c) => c.ok) ? 0 : 1;
}

/** What the running broker has (deployment.ts), a bad file refused with every problem (exit 1). */
async function providerSources(config: Readonly<Config>) {
  try {
    return await deploymentProviderSources(config);
  } catch (err) {
    if (err instanceof ProviderConfigError) throw new ProvidersCommandError(err.message, 1);
    throw err;
  }
}

/** PROVIDERS_FILE as start-up reads it (src/main.ts): the same file, the same loopback rule, secrets from the same environment. */
export async function loadProviders(config: Readonly<Config>): Promise<Provider[]> {
  try {
    const file = configuredProviders(config);
    return file.parse(await file.entries(), deploymentSelf(config));
  } catch (err) {
    if (err instanceof ProviderConfigError) throw new ProvidersCommandError(err.message, 1);
    throw err;
  }
}
