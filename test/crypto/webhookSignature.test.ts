import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signingKeyOf, signWebhook } from '../../src/crypto/webhookSignature.js';

// The signature is checked against the Standard Webhooks reference library (the npm package
// `standardwebhooks`), as a receiver would run it, not against a second copy of our own code.

const WHSEC = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const RAW = 'a-raw-webhook-secret-of-more-than-32-characters';

describe('webhook signatures', () => {
  it('signs id.timestamp.body so that the reference library verifies a whsec_ secret', () => {
    const body = JSON.stringify({
      id: 'e1',
      type: 'connection.created',
      occurredAt: '2026-01-01T00:00:00.000Z',
      data: {},
    });
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = signWebhook(signingKeyOf(WHSEC)!, 'e1', timestamp, body);
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    const headers = { 'webhook-id': 'e1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
    expect(new Webhook(WHSEC).verify(body, headers)).toMatchObject({ id: 'e1' });
    // One byte of the body, the id or the timestamp changed: refused.
    expect(() => new Webhook(WHSEC).verify(body.replace('e1', 'e2'), headers)).toThrow();
    expect(() => new Webhook(WHSEC).verify(body, { ...headers, 'webhook-id': 'e2' })).toThrow();
    expect(() => new Webhook(WHSEC).verify(body, { ...headers, 'webhook-timestamp': String(timestamp + 1) })).toThrow();
  });

  it("signs with the bytes of a secret not in the whsec_ form (the library's raw format)", () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = signWebhook(signingKeyOf(RAW)!, 'e1', timestamp, '{}');
    const headers = { 'webhook-id': 'e1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
    expect(new Webhook(RAW, { format: 'raw' }).verify('{}', headers)).toEqual({});
    expect(() => new Webhook(`${RAW}x`, { format: 'raw' }).verify('{}', headers)).toThrow();
  });

  it('matches the reference library for the same key, id, time and body', () => {
    const at = new Date('2026-03-01T12:00:00Z');
    const body = '{"test":2432232314}';
    expect(signWebhook(signingKeyOf(WHSEC)!, 'msg_p5jXN8AQM9LWM0D4loKWxJek', at.getTime() / 1000, body)).toBe(
      new Webhook(WHSEC).sign('msg_p5jXN8AQM9LWM0D4loKWxJek', at, body),
    );
  });

  it('has no key for a whsec_ secret that is not base64 of 24 to 64 bytes', () => {
    expect(signingKeyOf('whsec_not base64!')).toBeUndefined();
    expect(signingKeyOf(`whsec_${Buffer.alloc(16).toString('base64')}`)).toBeUndefined();
    expect(signingKeyOf(`whsec_${Buffer.alloc(65).toString('base64')}`)).toBeUndefined();
    expect(signingKeyOf(WHSEC)).toEqual(Buffer.alloc(32, 7));
  });
});
