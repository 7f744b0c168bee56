import { argumentsAad } from '../broker/acceptOriginalOperation.js';
import { handleAad } from '../broker/startNavigation.js';
import { SecretBoxError, type SecretBox } from '../crypto/secretBox.js';
import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { appendObservations } from '../ledger/ledgerRepo.js';
import { pkceAad } from '../oauth/pendingAuthRepo.js';
import type { AadLayout, SecretKind } from '../secrets/secretsRepo.js';
import { aadOf as tokenAad } from '../secrets/tokenVault.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import { registrationAad } from '../upstream/registrationsRepo.js';
import { kindsWithOldAad, lockSealedUnder, sealedKinds, writeResealed, type SealedKind } from './resealRepo.js';
import { reachFaultPoint } from '../shared/faultPoints.js';

export interface ResealDeps {
  pool: Pool;
  /** The vault's box: it seals under the active key and opens under every configured one. */
  box: SecretBox;
  clock: Clock;
  logger: Logger;
}

// Each kind's AAD from its row's facts (resealRepo.ts's `aadParts`), by the function that sealed it:
// a re-sealed value keeps the AAD that binds it to its row, in that function's current layout (a
// token sealed before its AAD bound its connection is sealed again binding it).
const tokenAadOf = (parts: readonly string[], layout: AadLayout) => {
  const [, connectionId = '', iss = '', sub = '', provider = '', kind = ''] = parts;
  return tokenAad({ connectionId, subject: { iss, sub }, provider }, kind as SecretKind, layout);
};
const openAadOf: Partial<Record<SealedKind, (parts: readonly string[]) => string>> = {
  tokens: (parts) => tokenAadOf(parts, parts[0] === '1' ? 1 : 2),
};
const aadOf: Record<SealedKind, (parts: readonly string[]) => string> = {
  tokens: (parts) => tokenAadOf(parts, 2),
  pendingAuthorizations: ([digest = '', navigationId = '']) => pkceAad(Buffer.from(digest, 'hex'), navigationId),
  toolArguments: ([operationKey = '']) => argumentsAad(operationKey),
  connectLinks: ([navigationId = '']) => handleAad(navigationId),
  upstreamRegistrations: ([id = '']) => registrationAad(id),
};

// Each batch writes a ledger entry per flow it touched, and every ledger write holds the chain's
// lock until commit (see sweeps.ts): small batches keep live flows from waiting behind a rotation.
export const RESEAL_PER_TRANSACTION = 20;

export interface ResealProgress {
  /** Values moved to the active key in this pass. */
  resealed: number;
  /** Values under a configured older key that failed to open (altered): left as they are, and logged. */
  unopened: number;
}

/**
 * One re-seal pass, safe on every instance at once: every value at rest sealed under an older
 * configured key (not the first of SECRET_KEYS) is opened and sealed again under the active one
 * with the same AAD, kind by kind, in short transactions of `batch` rows taken with SKIP LOCKED,
 * until none is left or `inBudget` says stop (the next sweep goes on). Each flow whose values a
 * batch moved gets one `values_resealed` ledger entry in that batch's transaction, counting them
 * by the key id they left. Tokens still sealed under the AAD layout before connections had several
 * accounts are moved too, whatever their key; with a single key configured that is all it asks for.
 */
export async function resealPass(
  deps: ResealDeps,
  inBudget: () => boolean,
  batch = RESEAL_PER_TRANSACTION,
): Promise<ResealProgress> {
  const older = deps.box.keyIds().slice(1);
  const progress = { resealed: 0, unopened: 0 };
  // With a single key, only values under an older AAD layout are left to move (an empty index range once done).
  const kinds = older.length === 0 ? kindsWithOldAad : sealedKinds;
  for (const kind of kinds) {
    // Past the last row seen, so a value that fails to open cannot hold up the rest of the pass.
    let after: string | Buffer | undefined;
    // At least one batch per kind, so a slow first kind cannot starve the ones after it.
    for (;;) {
      const step = await resealBatch(deps, kind, older, after, batch);
      progress.resealed += step.resealed;
      progress.unopened += step.unopened;
      if (step.last === undefined || step.taken < batch || !inBudget()) break;
      after = step.last;
    }
  }
  if (progress.resealed > 0 || progress.unopened > 0)
    deps.logger.info({ reseal: progress, activeKeyId: deps.box.keyIds()[0] }, 're-seal pass');
  return progress;
}

async function resealBatch(
  deps: ResealDeps,
  kind: SealedKind,
  older: readonly string[],
  after: string | Buffer | undefined,
  limit: number,
): Promise<{ taken: number; resealed: number; unopened: number; last: string | Buffer | undefined }> {
  return withTransaction(deps.pool, async (tx) => {
    const rows = await lockSealedUnder(tx, kind, older, after, limit);
    const written: { key: string | Buffer; sealed: Buffer; keyId: string }[] = [];
    const leftByFlow = new Map<string, Record<string, number>>();
    let unopened = 0;
    for (const row of rows) {
      const aad = aadOf[kind](row.aadParts);
      let plaintext: string;
      try {
        plaintext = deps.box.open(
          { ciphertext: row.sealed, keyId: row.keyId },
          (openAadOf[kind] ?? aadOf[kind])(row.aadParts),
        );
      } catch (err) {
        if (!(err instanceof SecretBoxError)) throw err;
        unopened += 1;
        deps.logger.warn(
          { kind, keyId: row.keyId, navigationId: row.navigationId },
          'a sealed value does not open under its configured key; left as it is',
        );
        continue;
      }
      const sealed = deps.box.seal(plaintext, aad);
      written.push({ key: row.key, sealed: sealed.ciphertext, keyId: sealed.keyId });
      if (row.navigationId === undefined) continue;
      const left = leftByFlow.get(row.navigationId) ?? {};
      left[row.keyId] = (left[row.keyId] ?? 0) + 1;
      leftByFlow.set(row.navigationId, left);
    }
    await writeResealed(tx, kind, written);
    const now = deps.clock.now();
    const keyId = deps.box.keyIds()[0];
    await appendObservations(
      tx,
      [...leftByFlow].map(([navigationId, from]) => ({
        navigationId,
        event: 'values_resealed',
        actor: 'system:reseal',
        evidence: { kind, keyId, from },
        at: now,
      })),
    );
    if (written.length > 0) reachFaultPoint('reseal.before_commit');
    return { taken: rows.length, resealed: written.length, unopened, last: rows.at(-1)?.key };
  });
}
