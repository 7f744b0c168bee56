// The vault's sealed token rows: what they are sealed with, and how a token set is written.
import type { Principal } from '../auth/principal.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Pool, Queryable } from '../db/pool.js';
import type { ProviderClient, ProviderTokens } from '../oauth/providerClient.js';
import type { Clock } from '../shared/clock.js';
import { upsertSecret, type SecretKind, type StoredSecret } from './secretsRepo.js';

export interface TokenVaultDeps {
  pool: Pool;
  box: SecretBox;
  clock: Clock;
  providers: ReadonlyMap<string, ProviderClient>;
}

// The AAD names the row a ciphertext belongs to, so it cannot be moved to another user, provider or kind.
export const aadOf = (subject: Principal, provider: string, kind: SecretKind) =>
  `${subject.iss}\n${subject.sub}\n${provider}\n${kind}`;

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
