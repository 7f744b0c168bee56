import { randomBytes, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK } from 'jose';

/** Key material of one development authorization server. JSON-serialisable, private keys included. */
export interface DevAuthKeys {
  jwks: { keys: JWK[] };
  cookieKeys: string[];
}

// JWK members that hold private key material (RFC 7518 §6).
const PRIVATE_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']);

/** One ES256 signing key (with kid, use 'sig', alg 'ES256') and two random cookie-signing keys. */
export async function generateDevAuthKeys(): Promise<DevAuthKeys> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return {
    jwks: { keys: [{ ...jwk, kid: randomUUID(), use: 'sig', alg: 'ES256' }] },
    cookieKeys: [randomBytes(32).toString('base64url'), randomBytes(32).toString('base64url')],
  };
}

/** The public half of the signing keys, as served on the issuer's `/jwks`. */
export function toPublicJwks(keys: DevAuthKeys): { keys: JWK[] } {
  return {
    keys: keys.jwks.keys.map(
      (jwk) => Object.fromEntries(Object.entries(jwk).filter(([name]) => !PRIVATE_MEMBERS.has(name))) as JWK,
    ),
  };
}
