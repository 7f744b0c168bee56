import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysStatus } from '../../src/cli/keysCommand.js';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { resealPass } from '../../src/jobs/reseal.js';
import { countSealedByKey } from '../../src/jobs/resealRepo.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';
import { findRegistration, keepRegistration, registrationAad } from '../../src/upstream/registrationsRepo.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// A Dynamic Client Registration's secret is a value at rest like the vault's: `broker keys status`
// counts it and the re-seal job moves it to the active key, its AAD still its row's.

const key = (kid: string) => ({ kid, key: new Secret(randomBytes(32).toString('base64url')) });
const [k1, k2] = [key('k1'), key('k2')];
const boxOf = (...keys: ReturnType<typeof key>[]) => createSecretBox(createKeyring(keys, 'secrets'));

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

describe('upstream client registrations at rest', () => {
  it('are counted per key id and re-sealed under the active key, still opening in their own row only', async () => {
    const id = randomUUID();
    const secret = `dcr-secret-canary-${randomBytes(8).toString('hex')}`;
    const registration = {
      id,
      issuer: 'https://as.example.com',
      upstream: 'notes',
      redirectUri: 'https://broker.example.com/oauth/callback/notes',
      clientId: 'client-1',
      sealedSecret: boxOf(k1).seal(secret, registrationAad(id)),
      authMethod: 'client_secret_basic' as const,
      secretExpiresAt: undefined,
      registeredAt: new Date(),
    };
    await keepRegistration(db.pool, registration);
    // A public client's registration holds no secret, so nothing to count or move.
    await keepRegistration(db.pool, {
      ...registration,
      id: randomUUID(),
      upstream: 'public',
      sealedSecret: undefined,
      authMethod: 'none',
    });
    const counted = (await countSealedByKey(db.pool)).filter((c) => c.kind === 'upstreamRegistrations');
    expect(counted).toEqual([{ kind: 'upstreamRegistrations', keyId: 'k1', count: 1 }]);
    expect(keysStatus(['k2', 'k1'], counted).keys.find((k) => k.keyId === 'k1')?.retirable).toBe(false);

    const logger = createLogger({ level: 'silent' });
    expect(await resealPass({ pool: db.pool, box: boxOf(k2, k1), clock: systemClock, logger }, () => true)).toEqual({
      resealed: 1,
      unopened: 0,
    });
    const stored = await findRegistration(db.pool, registration);
    expect(stored?.sealedSecret?.keyId).toBe('k2');
    expect(boxOf(k2).open(stored!.sealedSecret!, registrationAad(id))).toBe(secret);
    expect(() => boxOf(k2).open(stored!.sealedSecret!, registrationAad(randomUUID()))).toThrow();
  });
});
