import { z } from 'zod';
import { Secret } from '../shared/secret.js';

// The fields every PROVIDERS_FILE entry shares, whatever its shape (providerConfig.ts, src/upstream/upstreamEntry.ts).

export const providerId = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a short lower-case identifier');
export const scopeToken = z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be an RFC 6749 scope token');
// A secret in the file, or the name of an environment variable holding it (so the file can be committed).
export const SecretSchema = z.union([
  z.string().min(1).max(500),
  z.strictObject({ env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name') }),
]);

export type Env = (name: string) => string | undefined;

/** The secret an entry names, or undefined with the problem pushed (an unset environment variable). */
export function secretOf(value: z.infer<typeof SecretSchema>, env: Env, problems: string[]): Secret | undefined {
  if (typeof value === 'string') return new Secret(value);
  const fromEnv = env(value.env);
  if (fromEnv === undefined || fromEnv === '') {
    problems.push(`clientSecret: the environment variable ${value.env} is not set`);
    return undefined;
  }
  return new Secret(fromEnv);
}
