import type { Principal } from '../auth/principal.js';
import { missingScopes } from '../providers/scopes.js';
import { findConnection } from '../secrets/connectionsRepo.js';
import { accessTokenFor, type TokenVaultDeps } from '../secrets/tokenVault.js';

/** Whether a call needing `scopes` of a provider can run on the user's connection now. */
export type ConnectionAccess =
  | { kind: 'connected'; token: string }
  | { kind: 'not_connected' }
  /** Connected, but the grant lacks some of the scopes: a second consent, for the union, is needed. */
  | { kind: 'scopes_missing'; missing: string[] };

/**
 * The one answer to "is this user connected for this call": a usable token (refreshed if
 * stale) whose connection was granted every scope the call needs, or why not. A connection
 * recorded before granted scopes were kept is taken as covering them.
 */
export async function connectionAccessFor(
  vault: TokenVaultDeps,
  subject: Principal,
  provider: string,
  scopes: readonly string[],
): Promise<ConnectionAccess> {
  const token = await accessTokenFor(vault, subject, provider);
  if (!token) return { kind: 'not_connected' };
  const facts = vault.providers.get(provider)?.provider;
  if (scopes.length === 0 || !facts) return { kind: 'connected', token };
  const connection = await findConnection(vault.pool, subject, provider);
  const missing = connection ? missingScopes(facts, connection.grantedScopes, scopes) : [];
  return missing.length === 0 ? { kind: 'connected', token } : { kind: 'scopes_missing', missing };
}
