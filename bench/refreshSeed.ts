import type { Principal } from '../src/auth/principal.js';
import type { Pool } from '../src/db/pool.js';
import { withTransaction } from '../src/db/transaction.js';
import { insertConnection, secretOwnerOf } from '../src/secrets/connectionsRepo.js';
import { storeTokens, type TokenVaultDeps } from '../src/secrets/sealedTokens.js';
import type { RefreshProvider } from './refreshProvider.js';

// Connections per transaction, and transactions at once (within the bench pool's 10 connections).
const PER_TRANSACTION = 100;
const TRANSACTIONS_AT_ONCE = 4;

/**
 * One connection to `provider` per subject, as a completed connect flow leaves it (an active
 * connection row, its token set sealed with the vault's box and AAD), written with the broker's
 * own functions; every access token dies at `expiresAt`. No flow is behind them, so their
 * refreshes write no ledger entry.
 */
export async function seedConnections(
  pool: Pool,
  vault: Pick<TokenVaultDeps, 'box' | 'clock'>,
  seed: {
    server: RefreshProvider;
    provider: string;
    scopes: readonly string[];
    subjects: readonly Principal[];
    expiresAt: Date;
  },
): Promise<void> {
  const chunks: Principal[][] = [];
  for (let start = 0; start < seed.subjects.length; start += PER_TRANSACTION)
    chunks.push(seed.subjects.slice(start, start + PER_TRANSACTION));
  const writeChunk = (subjects: readonly Principal[]) =>
    withTransaction(pool, async (tx) => {
      for (const subject of subjects) {
        const now = vault.clock.now();
        const tokens = seed.server.issue(subject.sub, seed.expiresAt);
        const connection = await insertConnection(
          tx,
          {
            subject,
            provider: seed.provider,
            upstreamSubject: subject.sub,
            upstreamName: subject.sub,
            grantedScopes: seed.scopes,
            metadata: {},
            apiBase: undefined,
            navigationId: undefined,
          },
          now,
        );
        await storeTokens(tx, vault, secretOwnerOf(connection), { ...tokens, expiresAt: seed.expiresAt }, undefined);
      }
    });
  const worker = async () => {
    for (let next = chunks.shift(); next; next = chunks.shift()) await writeChunk(next);
  };
  await Promise.all(Array.from({ length: TRANSACTIONS_AT_ONCE }, worker));
}
