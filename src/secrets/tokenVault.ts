import type { Principal } from '../auth/principal.js';
import { keyMissing } from './missingKey.js';
import { openSecret, type TokenVaultDeps } from './sealedTokens.js';
import { findSecrets, type StoredSecret } from './secretsRepo.js';
import { refreshAccessToken } from './tokenRefresh.js';

export { aadOf, openSecret, storeTokens, type TokenVaultDeps } from './sealedTokens.js';

// A token this close to its expiry is renewed first: the call it is for must not outlive it.
const REFRESH_MARGIN_MS = 30_000;

/**
 * A usable access token for (subject, provider), or undefined when the user must connect (again):
 * never connected, the connection needs the user (a refused refresh or call, a key gone), or it was
 * disconnected. A stale token is renewed once across all instances (tokenRefresh.ts); a caller that
 * lost that race gets the winner's token.
 */
export async function accessTokenFor(
  deps: TokenVaultDeps,
  subject: Principal,
  provider: string,
): Promise<string | undefined> {
  const fresh = (s: StoredSecret | undefined) =>
    s !== undefined &&
    (s.expiresAt === undefined || s.expiresAt.getTime() > deps.clock.now().getTime() + REFRESH_MARGIN_MS);
  const stored = await findSecrets(deps.pool, subject, provider);
  if (stored.length === 0) return undefined; // never connected, or forgotten: nothing to refresh
  const access = stored.find((s) => s.kind === 'access_token');
  if (fresh(access) && !keyMissing(deps.box, access!)) return openSecret(deps.box, access!);
  const result = await refreshAccessToken(deps, subject, provider, { freshFor: fresh, wait: true });
  return result.kind === 'token' ? result.token : undefined;
}
