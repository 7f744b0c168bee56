import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { checkUrl, UrlPolicyError } from '../security/urlPolicy.js';
import { Secret } from '../shared/secret.js';

/** One third-party OAuth provider the broker connects users to. */
export interface Provider {
  id: string;
  displayName: string;
  /** OIDC issuer: its discovery document gives the endpoints, which must stay on the issuer's host. */
  issuer: string;
  clientId: string;
  clientSecret: Secret;
  scopes: string[];
  /** Base URL of the provider's API (e.g. https://reports.example.com/api). */
  apiBase: string;
  /** Resource indicator (RFC 8707) sent with the authorization and expected as the access token's `aud`. */
  audience: string;
  /** Verified operations through this provider wait for an operator's approval (issue #6 item 8). */
  highRisk: boolean;
}

const ProviderSchema = z.strictObject({
  id: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a short lower-case identifier'),
  displayName: z.string().trim().min(1).max(80),
  issuer: z.string(),
  clientId: z.string().min(1).max(200),
  clientSecret: z.string().min(1).max(500),
  scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/)).min(1).max(20),
  apiBase: z.string(),
  audience: z.string(),
  highRisk: z.boolean().default(false),
});

export class ProviderConfigError extends Error {
  override name = 'ProviderConfigError';
}

/**
 * Validates provider entries (from PROVIDERS_FILE, or built in development)
 * at start: schema, unique ids, and the URL policy on every URL. A rejected
 * entry stops start-up with every problem listed.
 */
export function parseProviders(entries: unknown, options: { allowLoopback: boolean }): Provider[] {
  const parsed = z.array(ProviderSchema).safeParse(entries);
  if (!parsed.success) throw new ProviderConfigError(`Invalid provider configuration:\n${parsed.error.issues.map((i) => `  - ${i.path.join('.')}: ${i.message}`).join('\n')}`);
  const problems: string[] = [];
  const ids = new Set<string>();
  for (const [index, entry] of parsed.data.entries()) {
    if (ids.has(entry.id)) problems.push(`[${index}].id: ${entry.id} is listed twice`);
    ids.add(entry.id);
    for (const field of ['issuer', 'apiBase', 'audience'] as const) {
      try {
        checkUrl(entry[field], { allowLoopback: options.allowLoopback }, `${entry.id}.${field}`);
      } catch (err) {
        if (!(err instanceof UrlPolicyError)) throw err;
        problems.push(`[${index}].${field}: ${err.message}`);
      }
    }
  }
  if (problems.length > 0) throw new ProviderConfigError(`Invalid provider configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return parsed.data.map((p) => ({ ...p, issuer: p.issuer.replace(/\/$/, ''), clientSecret: new Secret(p.clientSecret) }));
}

export async function readProvidersFile(path: string): Promise<unknown[]> {
  const text = await readFile(path, 'utf8');
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch (cause) {
    throw new ProviderConfigError(`PROVIDERS_FILE ${path} is not valid JSON`, { cause });
  }
  if (!Array.isArray(entries)) throw new ProviderConfigError(`PROVIDERS_FILE ${path} must hold a JSON array of providers`);
  return entries;
}
