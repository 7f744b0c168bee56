import type { Principal } from '../auth/principal.js';
import { keyMissing } from './missingKey.js';
import { openSecret, type TokenVaultDeps } from './sealedTokens.js';
import { findDefaultConnection } from './connectionsRepo.js';
import { findSecrets, type StoredSecret } from './secretsRepo.js';
import { refreshAccessToken } from './tokenRefresh.js';

export {
  aadOf,
  openSecret,
  storeTokens,
  replaceTokensAlongside,
  type SecretOwner,
  type TokenVaultDeps,
} from './sealedTokens.js';

// A token this close to its expiry is renewed first: the call it is for must not outlive it.
const REFRESH_MARGIN_MS = 30_000;

/**
 * A usable access token for the user's default connection to `provider` (connectionsRepo.ts
 * `findDefaultConnection`), or undefined when the user must connect (again). A call that may run on
 * another of the user's connections (several accounts) chooses it first and uses
 * `accessTokenForConnection`.
 */
export async function accessTokenFor(
  deps: TokenVaultDeps,
  subject: Principal,
  provider: string,
): Promise<string | undefined> {
  const connection = await findDefaultConnection(deps.pool, subject, provider);
  return connection && accessTokenForConnection(deps, connection.id);
}

/**
 * A usable access token of one connection, or undefined when the user must connect (again): its
 * tokens are gone, the connection needs the user (a refused refresh or call, a key gone), or it was
 * disconnected. A stale token is renewed once across all instances (tokenRefresh.ts); a caller that
 * lost that race gets the winner's token.
 */
export async function accessTokenForConnection(
  deps: TokenVaultDeps,
  connectionId: string,
  /** Its access token's secret as just read with the connection (findConnectionsWithAccessFor), when it was. */
  read?: StoredSecret,
): Promise<string | undefined> {
  const fresh = (s: StoredSecret | undefined) =>
    s !== undefined &&
    (s.expiresAt === undefined || s.expiresAt.getTime() > deps.clock.now().getTime() + REFRESH_MARGIN_MS);
  if (read && fresh(read) && !keyMissing(deps.box, read)) return openSecret(deps.box, read);
  const stored = await findSecrets(deps.pool, connectionId);
  if (stored.length === 0) return undefined; // never connected, or forgotten: nothing to refresh
  const access = stored.find((s) => s.kind === 'access_token');
  if (fresh(access) && !keyMissing(deps.box, access!)) return openSecret(deps.box, access!);
  const result = await refreshAccessToken(deps, connectionId, { freshFor: fresh, wait: true });
  return result.kind === 'token' ? result.token : undefined;
}
