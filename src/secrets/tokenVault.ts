import type { Principal } from '../auth/principal.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Pool, Queryable } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { AppError } from '../errors/appError.js';
import type { ProviderClient, ProviderTokens } from '../oauth/providerClient.js';
import type { Clock } from '../shared/clock.js';
import { forgetUnopenable, keyMissing } from './missingKey.js';
import { deleteSecrets, findSecrets, upsertSecret, type SecretKind, type StoredSecret } from './secretsRepo.js';

export interface TokenVaultDeps {
  pool: Pool;
  box: SecretBox;
  clock: Clock;
  providers: ReadonlyMap<string, ProviderClient>;
}

// The AAD names the row a ciphertext belongs to, so it cannot be moved to another user, provider or kind.
export const aadOf = (subject: Principal, provider: string, kind: SecretKind) =>
  `${subject.iss}\n${subject.sub}\n${provider}\n${kind}`;
const REFRESH_MARGIN_MS = 30_000;

/** The plaintext of a stored secret (its row's identity is the AAD). */
export const openSecret = (box: SecretBox, s: StoredSecret): string =>
  box.open({ ciphertext: s.ciphertext, keyId: s.keyId }, aadOf(s.subject, s.provider, s.kind));

/** Seals and stores a token set for (subject, provider), in the caller's transaction. */
export async function storeTokens(
  tx: Queryable,
  deps: Pick<TokenVaultDeps, 'box' | 'clock'>,
  subject: Principal,
  provider: string,
  tokens: ProviderTokens,
  navigationId: string | undefined,
): Promise<void> {
  const now = deps.clock.now();
  const write = async (kind: SecretKind, value: string, expiresAt: Date | undefined) => {
    const sealed = deps.box.seal(value, aadOf(subject, provider, kind));
    await upsertSecret(
      tx,
      { subject, provider, kind, ciphertext: sealed.ciphertext, keyId: sealed.keyId, expiresAt, navigationId },
      now,
    );
  };
  await write('access_token', tokens.accessToken, tokens.expiresAt);
  if (tokens.refreshToken) await write('refresh_token', tokens.refreshToken, undefined);
}

/**
 * A usable access token for (subject, provider), or undefined when the user
 * must connect (again). An expired token is refreshed once at a time: the
 * rows are locked, staleness is checked again under the lock, and only then
 * is the provider called, so two instances never spend one refresh token. A refused refresh forgets the tokens.
 */
export async function accessTokenFor(
  deps: TokenVaultDeps,
  subject: Principal,
  provider: string,
): Promise<string | undefined> {
  const open = (s: StoredSecret) => openSecret(deps.box, s);
  const fresh = (s: StoredSecret | undefined) =>
    s !== undefined &&
    (s.expiresAt === undefined || s.expiresAt.getTime() > deps.clock.now().getTime() + REFRESH_MARGIN_MS);
  const stored = await findSecrets(deps.pool, subject, provider);
  if (stored.length === 0) return undefined; // never connected: nothing to lock or refresh
  const unlocked = stored.find((s) => s.kind === 'access_token');
  if (fresh(unlocked) && !keyMissing(deps.box, unlocked!)) return open(unlocked!);
  return withTransaction(deps.pool, async (tx) => {
    const secrets = await findSecrets(tx, subject, provider, true);
    if (await forgetUnopenable(tx, deps, secrets)) return undefined; // its key is gone: connect again
    const access = secrets.find((s) => s.kind === 'access_token');
    if (fresh(access)) return open(access!);
    const refresh = secrets.find((s) => s.kind === 'refresh_token');
    const client = deps.providers.get(provider);
    if (!refresh || !client) return undefined;
    let tokens: ProviderTokens;
    try {
      tokens = await client.refresh(open(refresh));
    } catch (err) {
      // invalid_grant surfaces as invalid_input: the grant is gone, the user must connect again.
      if (err instanceof AppError && err.code === 'invalid_input') {
        await deleteSecrets(tx, subject, provider);
        return undefined;
      }
      throw err;
    }
    await storeTokens(tx, deps, subject, provider, tokens, undefined);
    return tokens.accessToken;
  });
}
