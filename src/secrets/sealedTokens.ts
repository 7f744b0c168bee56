// The vault's sealed token rows: what they are sealed with, and how a token set is written.
import type { Principal } from '../auth/principal.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Pool, Queryable } from '../db/pool.js';
import type { ProviderClient, ProviderTokens } from '../oauth/providerClient.js';
import type { Clock } from '../shared/clock.js';
import type { Alongside } from '../db/alongside.js';
import {
  secretsDeleteOtherKindsAlongside,
  secretsUpsertAlongside,
  upsertSecrets,
  type AadLayout,
  type SecretKind,
  type SecretWrite,
  type StoredSecret,
} from './secretsRepo.js';

export interface TokenVaultDeps {
  pool: Pool;
  box: SecretBox;
  clock: Clock;
  providers: ReadonlyMap<string, ProviderClient>;
}

/** The connection a secret belongs to, as its AAD names it. */
export interface SecretOwner {
  connectionId: string;
  subject: Principal;
  provider: string;
}

// The AAD names the row a ciphertext belongs to, so it cannot be moved to another connection (layout 2),
// user, provider or kind. Layout 1 is what rows sealed before connections had several accounts carry
// until the re-seal job moves them (migrations/0019_connection_accounts.sql).
export const aadOf = (owner: SecretOwner, kind: SecretKind, layout: AadLayout = 2): string => {
  const legacy = `${owner.subject.iss}\n${owner.subject.sub}\n${owner.provider}\n${kind}`;
  return layout === 1 ? legacy : `${legacy}\n${owner.connectionId}`;
};

/** The plaintext of a stored secret (its row's identity is the AAD). */
export const openSecret = (box: SecretBox, s: StoredSecret): string =>
  box.open({ ciphertext: s.ciphertext, keyId: s.keyId }, aadOf(s, s.kind, s.aadLayout));

/** Seals and stores a token set for one connection, in the caller's transaction. */
export async function storeTokens(
  tx: Queryable,
  deps: Pick<TokenVaultDeps, 'box' | 'clock'>,
  owner: SecretOwner,
  tokens: ProviderTokens,
  navigationId: string | undefined,
): Promise<void> {
  await upsertSecrets(tx, sealTokens(deps, owner, tokens, navigationId), deps.clock.now());
}

/**
 * A connection's whole token set replaced by `tokens`, as writes beside another statement's (the
 * callback's, which writes the connection too): each kind the grant carries is upserted and every
 * other kind deleted, so a refresh token of a previous grant never outlives it.
 */
export function replaceTokensAlongside(
  deps: Pick<TokenVaultDeps, 'box' | 'clock'>,
  owner: SecretOwner,
  tokens: ProviderTokens,
  navigationId: string | undefined,
): Alongside[] {
  const rows = sealTokens(deps, owner, tokens, navigationId);
  return [
    secretsDeleteOtherKindsAlongside(
      owner.connectionId,
      rows.map((r) => r.kind),
    ),
    secretsUpsertAlongside(rows, deps.clock.now()),
  ];
}

/** A token set's rows, each sealed to its owner and kind. */
function sealTokens(
  deps: Pick<TokenVaultDeps, 'box'>,
  owner: SecretOwner,
  tokens: ProviderTokens,
  navigationId: string | undefined,
): SecretWrite[] {
  const seal = (kind: SecretKind, value: string, expiresAt: Date | undefined): SecretWrite => {
    const sealed = deps.box.seal(value, aadOf(owner, kind));
    return {
      connectionId: owner.connectionId,
      subject: owner.subject,
      provider: owner.provider,
      kind,
      ciphertext: sealed.ciphertext,
      keyId: sealed.keyId,
      expiresAt,
      navigationId,
    };
  };
  return [
    seal('access_token', tokens.accessToken, tokens.expiresAt),
    ...(tokens.refreshToken ? [seal('refresh_token', tokens.refreshToken, undefined)] : []),
  ];
}
