import { hkdfSync } from 'node:crypto';
import type { Secret } from '../shared/secret.js';

export interface DerivedKey {
  kid: string;
  key: Uint8Array;
}

export interface Keyring {
  /** The key new material is sealed with: the rotation's agreed key, else the first configured. */
  active(): DerivedKey;
  /** The key for a kid from a sealed header; undefined for an unknown (retired or forged) kid. */
  byKid(kid: string): DerivedKey | undefined;
  /** Every configured key id, in SECRET_KEYS's order. */
  kids(): readonly string[];
  /** A key id this keyring lacks, held by another live instance: a rotation or a rollback is rolling out. */
  heldByLive(kid: string): boolean;
}

/**
 * What the instances of a deployment agree on while keys rotate (src/secrets/keyAgreement.ts): which
 * configured key seals new material (the first that every live instance holds, so no instance meets
 * a value it cannot open), and which key ids other live instances hold.
 */
export interface KeyRotationView {
  activeKid(): string;
  heldByLive(kid: string): boolean;
}

/**
 * Purpose-bound keys from SECRET_KEYS (kid:key, the first active). Each
 * purpose gets its own HKDF-SHA256 sub-key, so a key used to seal MRTR state
 * never also encrypts stored tokens. Rotation: add a new first entry; it seals
 * once every live instance holds it (`rotation`), the re-seal job
 * (src/jobs/reseal.ts) then moves what the old ones sealed at rest, and
 * `broker keys status` says when an old one can go.
 */
export function createKeyring(
  keys: readonly { kid: string; key: Secret }[],
  purpose: string,
  rotation?: KeyRotationView,
): Keyring {
  if (keys.length === 0) throw new Error('at least one key is required');
  const kids = keys.map((k) => k.kid);
  // A sealed value names its key by id: a second key under one id would be used to open what the first sealed.
  const repeated = kids.find((kid, i) => kids.indexOf(kid) !== i);
  if (repeated !== undefined) throw new Error(`key id ${repeated} is named more than once`);
  const derived = keys.map(({ kid, key }) => ({
    kid,
    key: new Uint8Array(
      hkdfSync('sha256', Buffer.from(key.reveal(), 'base64url'), Buffer.alloc(0), `connect-broker ${purpose}`, 32),
    ),
  }));
  const byKid = new Map(derived.map((k) => [k.kid, k]));
  return {
    active: () => (rotation && byKid.get(rotation.activeKid())) || derived[0]!,
    byKid: (kid) => byKid.get(kid),
    kids: () => kids,
    heldByLive: (kid) => !byKid.has(kid) && rotation !== undefined && rotation.heldByLive(kid),
  };
}
