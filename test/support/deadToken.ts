import { expect } from 'vitest';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox, type SecretBox } from '../../src/crypto/secretBox.js';
import { aadOf } from '../../src/secrets/tokenVault.js';
import { Secret } from '../../src/shared/secret.js';
import type { BrokerStack } from './brokerStack.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from './connectFlow.js';

// A stored Report Service token the Report Service no longer accepts, as after
// a revocation or a withdrawn grant: the real token, its signature altered,
// sealed back into its own row. Its API then answers 401 to it.

export function secretsBox(stack: BrokerStack): SecretBox {
  return createSecretBox(
    createKeyring(
      stack.secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
      'secrets',
    ),
  );
}

export interface KilledToken {
  /** The token the callback stored, and the altered one now stored instead. */
  live: string;
  dead: string;
  /** The flow whose callback stored it. */
  navigationId: string;
}

export async function killStoredToken(stack: BrokerStack, sub: string): Promise<KilledToken> {
  const { rows } = await stack.db.pool.query<{
    subject_iss: string;
    connection_id: string;
    ciphertext: Buffer;
    key_id: string;
    navigation_id: string;
  }>(
    "SELECT subject_iss, connection_id, ciphertext, key_id, navigation_id FROM secrets WHERE subject_sub = $1 AND provider = 'reports' AND kind = 'access_token'",
    [sub],
  );
  const row = rows[0];
  if (!row) throw new Error(`${sub} has no stored Report Service token`);
  const box = secretsBox(stack);
  const aad = aadOf(
    { connectionId: row.connection_id, subject: { iss: row.subject_iss, sub }, provider: 'reports' },
    'access_token',
  );
  const live = box.open({ ciphertext: row.ciphertext, keyId: row.key_id }, aad);
  const dead = `${live.slice(0, -6)}${live.endsWith('AAAAAA') ? 'BBBBBB' : 'AAAAAA'}`;
  const sealed = box.seal(dead, aad);
  await stack.db.pool.query(
    "UPDATE secrets SET ciphertext = $2, key_id = $3 WHERE subject_sub = $1 AND provider = 'reports' AND kind = 'access_token'",
    [sub, sealed.ciphertext, sealed.keyId],
  );
  return { live, dead, navigationId: row.navigation_id };
}

/** Connects `login` from scratch through an MRTR reports_list flow (the browser completes it); returns that flow's requestState. */
export async function connectThroughList(stack: BrokerStack, token: string, login: string): Promise<void> {
  await stack.db.pool.query('DELETE FROM secrets WHERE subject_sub = $1', [login]);
  const elicited = await elicitConnection(stack, token, 'reports_list', {});
  await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, login), login);
  const listed = await retryConnection(stack, token, 'reports_list', {}, elicited.requestState, 'accept');
  expect(listed.json.result).toMatchObject({
    resultType: 'complete',
    structuredContent: { reports: expect.any(Array) },
  });
}

export async function forgottenEvents(stack: BrokerStack, navigationId: string) {
  const { rows } = await stack.db.pool.query(
    "SELECT actor, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_forgotten'",
    [navigationId],
  );
  return rows;
}

export const FORGOTTEN = { actor: 'provider:reports', evidence: { provider: 'reports', reason: 'upstream_401' } };

/** Neither the token the provider refused nor the one the callback stored appears in any answer or log line. */
export function expectNoTokenIn(stack: BrokerStack, killed: KilledToken, answers: readonly string[]): void {
  for (const text of [...answers, ...stack.logs]) {
    expect(text.includes(killed.live) || text.includes(killed.dead), 'a token leaked').toBe(false);
  }
}
