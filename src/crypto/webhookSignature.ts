import { createHmac } from 'node:crypto';

// The Standard Webhooks signature (https://www.standardwebhooks.com, "Verifying webhook authenticity"):
// HMAC-SHA256 over `${id}.${timestamp}.${body}`, base64, labelled v1. A receiver verifies it with the
// same secret and rejects a stale Webhook-Timestamp, so a captured delivery cannot be replayed later.

const WHSEC = 'whsec_';

/**
 * The HMAC key of WEBHOOK_SECRET: for a secret in the Standard Webhooks form (`whsec_` and base64,
 * as its libraries take it), the decoded bytes, which should be 24 to 64; for any other value, its
 * UTF-8 bytes (a library's "raw" secret). Undefined for a `whsec_` value that is not such base64.
 */
export function signingKeyOf(secret: string): Buffer | undefined {
  if (!secret.startsWith(WHSEC)) return Buffer.from(secret, 'utf8');
  const encoded = secret.slice(WHSEC.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.length >= 24 && key.length <= 64 ? key : undefined;
}

/** The Webhook-Signature header's value for one delivery attempt (`timestamp`: Unix seconds). */
export function signWebhook(key: Buffer, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}
