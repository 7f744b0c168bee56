import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createKeyring } from '../../src/crypto/keyring.js';
import { argumentsDigest, createRequestStateCodec, type StateBinding } from '../../src/mcp/requestState.js';
import { Secret } from '../../src/shared/secret.js';

const key = (kid: string) => ({ kid, key: new Secret(randomBytes(32).toString('base64url')) });
const k1 = key('k1');
const k2 = key('k2');
let now = new Date('2026-11-30T10:00:00Z');
const clock = { now: () => now };
const codec = (keys = [k1]) =>
  createRequestStateCodec({ keyring: createKeyring(keys, 'mrtr-request-state'), clock, ttlSeconds: 300 });

const binding: StateBinding = {
  principal: { iss: 'https://idp.test', sub: 'alice' },
  method: 'tools/call',
  tool: 'notes_delete',
  digest: argumentsDigest(['file:///work/notes/alice', 'TPS']),
  phase: 'confirm_delete',
};

describe('requestState', () => {
  it('round-trips the binding, nonce, candidates and expiry, and hides them from the client', async () => {
    const { token, state } = await codec().seal(binding, { candidates: ['note_aaaaaaaaaaaa'] });
    const opened = await codec().open(token, binding);
    expect(opened).toEqual(state);
    expect(opened.candidates).toEqual(['note_aaaaaaaaaaaa']);
    expect(token).not.toContain('alice');
    expect(Buffer.from(token.split('.')[3] ?? '', 'base64url').toString()).not.toContain('note_');
  });

  it('binds the OAuth client: another client of the same user, or none, cannot open it', async () => {
    const ofClient = { ...binding, clientId: 'host-a' };
    const { token } = await codec().seal(ofClient, { candidates: [] });
    await expect(codec().open(token, ofClient)).resolves.toMatchObject({ clientId: 'host-a' });
    await expect(codec().open(token, { ...binding, clientId: 'host-b' })).rejects.toThrow(/another caller/);
    await expect(codec().open(token, binding)).rejects.toThrow(/another caller/);
    const ofNone = await codec().seal(binding, { candidates: [] });
    await expect(codec().open(ofNone.token, ofClient)).rejects.toThrow(/another caller/);
  });

  it("seals an upstream's requestState and input keys inside, and says when a state is only for another step of the call", async () => {
    const relayed = { ...binding, phase: 'upstream_input' };
    const { token } = await codec().seal(relayed, { upstreamState: 'upstream-state-canary', inputKeys: ['color'] });
    expect(Buffer.from(token.split('.')[3] ?? '', 'base64url').toString()).not.toContain('canary');
    await expect(codec().open(token, relayed)).resolves.toMatchObject({
      upstreamState: 'upstream-state-canary',
      inputKeys: ['color'],
    });
    await expect(codec().open(token, binding)).rejects.toMatchObject({ otherPhase: true });
    // Another principal's, or other arguments': not merely another step.
    const bob = { ...binding, principal: { iss: 'https://idp.test', sub: 'bob' } };
    await expect(codec().open(token, bob)).rejects.toMatchObject({ otherPhase: false });
    await expect(codec().open(token, { ...binding, digest: argumentsDigest(['other']) })).rejects.toMatchObject({
      otherPhase: false,
    });
  });

  it('rejects a tampered state', async () => {
    const { token } = await codec().seal(binding, { candidates: ['note_aaaaaaaaaaaa'] });
    const parts = token.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = (body[0] ?? 0) ^ 1;
    parts[3] = body.toString('base64url');
    await expect(codec().open(parts.join('.'), binding)).rejects.toThrow(/not valid/);
  });

  it('rejects an expired state', async () => {
    const { token } = await codec().seal(binding, {});
    const sealedAt = now;
    now = new Date(sealedAt.getTime() + 301_000);
    await expect(codec().open(token, binding)).rejects.toThrow(/expired/);
    now = sealedAt;
  });

  it('rejects a state presented by another principal', async () => {
    const { token } = await codec().seal(binding, {});
    await expect(
      codec().open(token, { ...binding, principal: { iss: 'https://idp.test', sub: 'mallory' } }),
    ).rejects.toThrow(/another caller/);
    await expect(
      codec().open(token, { ...binding, principal: { iss: 'https://other-idp.test', sub: 'alice' } }),
    ).rejects.toThrow(/another caller/);
  });

  it('rejects a state presented with different arguments, or for another tool', async () => {
    const { token } = await codec().seal(binding, {});
    await expect(
      codec().open(token, { ...binding, digest: argumentsDigest(['file:///work/notes/alice', 'TPX']) }),
    ).rejects.toThrow(/different arguments/);
    await expect(codec().open(token, { ...binding, tool: 'notes_create' })).rejects.toThrow(
      /another caller or another operation/,
    );
  });

  it('opens states sealed with a retired key after rotation, and refuses an unknown key id', async () => {
    const { token } = await codec([k1]).seal(binding, {});
    await expect(codec([k2, k1]).open(token, binding)).resolves.toMatchObject({ tool: 'notes_delete' });
    await expect(codec([k2]).open(token, binding)).rejects.toThrow(/unknown key/);
  });

  it('refuses garbage and oversized input', async () => {
    await expect(codec().open('not-a-jwe', binding)).rejects.toThrow(/not valid/);
    await expect(codec().open('x'.repeat(9000), binding)).rejects.toThrow(/too long/);
  });
});
