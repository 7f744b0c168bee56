import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { generateDevAuthKeys, type DevAuthKeys } from './devAuthKeys.js';

const AuthKeysSchema = z.object({
  jwks: z.object({ keys: z.array(z.record(z.string(), z.unknown())).min(1) }),
  cookieKeys: z.array(z.string().min(16)).min(1),
});

const DevSecretsSchema = z.strictObject({
  version: z.literal(1),
  /** SECRET_KEYS for development: kid → 32 random bytes (base64url). */
  secretKeys: z.array(z.strictObject({ kid: z.string(), key: z.string() })).min(1),
  idp: AuthKeysSchema,
  reports: AuthKeysSchema,
  brokerIdpClientSecret: z.string().min(32),
  brokerReportsClientSecret: z.string().min(32),
});
export type DevSecrets = Omit<z.infer<typeof DevSecretsSchema>, 'idp' | 'reports'> & {
  idp: DevAuthKeys;
  reports: DevAuthKeys;
};

/**
 * Development key material, generated once and kept in `<dataDir>/dev-secrets.json`
 * (mode 0600) so tokens, sessions and stored secrets survive a restart.
 * Production never reads this file (config requires explicit keys there).
 */
/** The development secrets under `dataDir`, or undefined when none were generated there yet. */
export async function readDevSecrets(dataDir: string): Promise<DevSecrets | undefined> {
  const path = join(dataDir, 'dev-secrets.json');
  const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (text === undefined) return undefined;
  const parsed = DevSecretsSchema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new Error(
      `${path} is damaged (${parsed.error.issues[0]?.message}); delete it to generate new development keys`,
    );
  return parsed.data as DevSecrets; // the JWKs were written by generateDevAuthKeys
}

export async function loadOrCreateDevSecrets(dataDir: string): Promise<DevSecrets> {
  const path = join(dataDir, 'dev-secrets.json');
  const existing = await readDevSecrets(dataDir);
  if (existing) return existing;
  const secrets: DevSecrets = {
    version: 1,
    secretKeys: [{ kid: 'dev1', key: randomBytes(32).toString('base64url') }],
    idp: await generateDevAuthKeys(),
    reports: await generateDevAuthKeys(),
    brokerIdpClientSecret: randomBytes(32).toString('base64url'),
    brokerReportsClientSecret: randomBytes(32).toString('base64url'),
  };
  await writeFile(path, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  return secrets;
}
