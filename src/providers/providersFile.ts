import { readListFile } from '../shared/listFile.js';
import { ProviderConfigError } from './providerConfig.js';

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
