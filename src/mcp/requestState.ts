import { createHash, randomBytes } from 'node:crypto';
import { EncryptJWT, errors, jwtDecrypt } from 'jose';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import type { Keyring } from '../crypto/keyring.js';
import { invalidParams } from './toMcp.js';
import type { Clock } from '../shared/clock.js';

// MRTR requestState (MCP 2026-07-28 MRTR, Server Requirements): an attacker-controlled string, so it is
// sealed (JWE dir + A256GCM: confidential and integrity-protected) and bound
// to the principal, the method and tool, a digest of the arguments, the
// phase and a short expiry. Single use is enforced server-side by the nonce.

const ISSUER = 'connect-broker';
/** The most of an upstream MCP server's requestState the broker seals inside its own (its own stays under 8 KiB). */
export const MAX_UPSTREAM_STATE = 4096;
/** The most input requests one relayed answer may carry. */
export const MAX_INPUT_KEYS = 20;
const AUDIENCE = 'mrtr-request-state';

const PayloadSchema = z.object({
  iss: z.literal(ISSUER),
  aud: z.literal(AUDIENCE),
  exp: z.number(),
  pi: z.string(),
  ps: z.string(),
  m: z.string(),
  t: z.string(),
  d: z.string(),
  ph: z.string(),
  n: z.string(),
  c: z.array(z.string()).max(50),
  nv: z.string().optional(),
  g: z.number().int().min(0).optional(),
  // The OAuth client the principal called through ('' when its token named none).
  ci: z.string().optional(),
  // A relayed upstream's own requestState and the keys of the input it asked for.
  us: z.string().max(MAX_UPSTREAM_STATE).optional(),
  ik: z.array(z.string()).max(MAX_INPUT_KEYS).optional(),
  // The accepted operation (its receipt) a relayed upstream question belongs to.
  rc: z.string().optional(),
});

export interface StateBinding {
  principal: Principal;
  /** The OAuth client of the principal's token (client_id / azp): another client of the same user cannot use the state. */
  clientId?: string | undefined;
  method: string;
  tool: string;
  /** Digest of the salient arguments, from argumentsDigest(). */
  digest: string;
  phase: string;
}

/** What a state refers to besides its binding: offered candidates, or a navigation and its retry generation. */
export interface StateRefs {
  candidates?: string[];
  navigationId?: string;
  generation?: number;
  /** Overrides the codec's default lifetime (a connection may take longer than a confirmation). */
  ttlSeconds?: number;
  /** An upstream MCP server's requestState, sealed inside this one and echoed to it on the retry. */
  upstreamState?: string;
  /** The keys of the input requests relayed from the upstream: the only inputResponses passed back. */
  inputKeys?: string[];
  /** The receipt of the accepted operation whose upstream asked: the answer resumes that operation. */
  receiptId?: string;
}

export interface SealedState extends StateBinding {
  nonce: string;
  candidates: string[];
  navigationId: string | undefined;
  generation: number;
  expiresAt: Date;
  upstreamState: string | undefined;
  inputKeys: string[];
  receiptId: string | undefined;
}

export class RequestStateError extends Error {
  override name = 'RequestStateError';
  /** Whether it is this caller's state for this call, sealed for another step of it (a tool with several kinds of state tries each). */
  constructor(message: string, options?: ErrorOptions & { phase?: boolean }) {
    super(message, options);
    this.otherPhase = options?.phase === true;
  }
  readonly otherPhase: boolean;
}

export function argumentsDigest(values: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(values)).digest('base64url');
}

export interface RequestStateCodec {
  seal(binding: StateBinding, refs: StateRefs): Promise<{ token: string; state: SealedState }>;
  /** Opens a state and checks it belongs to `expected`; throws RequestStateError otherwise. */
  open(token: string, expected: StateBinding): Promise<SealedState>;
}

export function createRequestStateCodec(deps: {
  keyring: Keyring;
  clock: Clock;
  ttlSeconds: number;
}): RequestStateCodec {
  return {
    async seal(binding, refs) {
      const candidates = refs.candidates ?? [];
      const generation = refs.generation ?? 0;
      const { kid, key } = deps.keyring.active();
      const now = Math.floor(deps.clock.now().getTime() / 1000);
      const nonce = randomBytes(16).toString('base64url');
      const ttl = refs.ttlSeconds ?? deps.ttlSeconds;
      const token = await new EncryptJWT({
        pi: binding.principal.iss,
        ps: binding.principal.sub,
        m: binding.method,
        t: binding.tool,
        d: binding.digest,
        ph: binding.phase,
        ci: binding.clientId ?? '',
        n: nonce,
        c: candidates,
        ...(refs.navigationId ? { nv: refs.navigationId } : {}),
        g: generation,
        ...(refs.upstreamState !== undefined && { us: refs.upstreamState }),
        ...(refs.inputKeys !== undefined && { ik: refs.inputKeys }),
        ...(refs.receiptId !== undefined && { rc: refs.receiptId }),
      })
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt(now)
        .setExpirationTime(now + ttl)
        .encrypt(key);
      return {
        token,
        state: {
          ...binding,
          nonce,
          candidates,
          navigationId: refs.navigationId,
          generation,
          expiresAt: new Date((now + ttl) * 1000),
          upstreamState: refs.upstreamState,
          inputKeys: refs.inputKeys ?? [],
          receiptId: refs.receiptId,
        },
      };
    },

    async open(token, expected) {
      if (token.length > 8192) throw new RequestStateError('requestState is too long');
      let payload: z.infer<typeof PayloadSchema>;
      try {
        const result = await jwtDecrypt(
          token,
          (header) => {
            const found = typeof header.kid === 'string' ? deps.keyring.byKid(header.kid) : undefined;
            if (!found) throw new RequestStateError('requestState was sealed with an unknown key');
            return found.key;
          },
          {
            issuer: ISSUER,
            audience: AUDIENCE,
            keyManagementAlgorithms: ['dir'],
            contentEncryptionAlgorithms: ['A256GCM'],
            currentDate: deps.clock.now(),
            requiredClaims: ['exp'],
          },
        );
        payload = PayloadSchema.parse(result.payload);
      } catch (err) {
        if (err instanceof errors.JWTExpired)
          throw new RequestStateError('requestState has expired; call the tool again without it', { cause: err });
        if (err instanceof RequestStateError) throw err;
        throw new RequestStateError('requestState is not valid (tampered or not from this server)', { cause: err });
      }
      const matches =
        payload.pi === expected.principal.iss &&
        payload.ps === expected.principal.sub &&
        payload.m === expected.method &&
        payload.t === expected.tool &&
        (payload.ci ?? '') === (expected.clientId ?? '');
      if (!matches || payload.ph !== expected.phase)
        throw new RequestStateError('requestState belongs to another caller or another operation', {
          phase: matches && payload.d === expected.digest,
        });
      if (payload.d !== expected.digest)
        throw new RequestStateError('requestState was issued for different arguments; call the tool again without it');
      return {
        ...expected,
        nonce: payload.n,
        candidates: payload.c,
        navigationId: payload.nv,
        generation: payload.g ?? 0,
        expiresAt: new Date(payload.exp * 1000),
        upstreamState: payload.us,
        inputKeys: payload.ik ?? [],
        receiptId: payload.rc,
      };
    },
  };
}

/** Opens a state presented on a tool call; a state that fails is a JSON-RPC error, in-band (MCP 2026-07-28 MRTR, Error Handling), -32602 as the TypeScript SDK answers it. */
export async function openPresentedState(
  codec: RequestStateCodec,
  token: string,
  binding: StateBinding,
): Promise<SealedState> {
  try {
    return await codec.open(token, binding);
  } catch (err) {
    if (err instanceof RequestStateError) throw invalidParams(err.message, { cause: err });
    throw err;
  }
}
