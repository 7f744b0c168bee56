import { readListFile } from '../shared/listFile.js';
import type { Config } from '../config/config.js';
import type { Env } from './entryFields.js';
import { parseProviders, ProviderConfigError, type Provider } from './providerConfig.js';
import type { BrokerSelf } from './selfReference.js';

/**
 * PROVIDERS_FILE: an array of provider entries, in YAML (`.yaml`, `.yml`) or
 * JSON (any other name). Throws ProviderConfigError naming the file, and the
 * line and column where the parser stopped, when it cannot be read, does not
 * parse, or holds something other than an array.
 */
export function readProvidersFile(path: string): Promise<unknown[]> {
  return readListFile(path, {
    variable: 'PROVIDERS_FILE',
    items: 'providers',
    error: (message, cause) => new ProviderConfigError(message, cause === undefined ? undefined : { cause }),
  });
}

/**
 * PROVIDERS_FILE as start-up reads it (src/main.ts), for the service and every command that must agree
 * with it: the file's entries (none when it is unset), parsed with loopback URLs allowed outside
 * production and client secrets read from the environment (or `readEnv`, for a command that reads none).
 */
export function configuredProviders(config: Pick<Config, 'mode' | 'broker'>) {
  return {
    entries: (): Promise<unknown[]> =>
      config.broker.providersFile ? readProvidersFile(config.broker.providersFile) : Promise.resolve([]),
    parse: (entries: unknown[], self: BrokerSelf, readEnv: Env = config.broker.providerSecret): Provider[] =>
      parseProviders(entries, { allowLoopback: config.mode !== 'production', readEnv, self }),
  };
}
