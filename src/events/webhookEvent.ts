import { z } from 'zod';

// What the broker tells a receiver (WEBHOOK_URL), one type per fact, each written in the transaction
// of the change it reports (webhookOutboxRepo.ts). Data holds ids and names only: never a token, a
// secret, or text a user or a model wrote.

export const webhookEventTypes = [
  'connection.created', // a verified callback stored a connection (a first connect or a reconnect)
  'connection.needs_reauth', // the stored tokens can no longer be used: the user must connect again
  'connection.revoked', // the user or an operator disconnected it
  'operation.needs_operator', // an accepted operation whose outcome only an operator can settle
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/** The states of an outbox row: waiting (or leased) for delivery, accepted by the receiver, given up. */
export const webhookEventStates = ['pending', 'delivered', 'dead'] as const;
export type WebhookEventState = (typeof webhookEventStates)[number];

/** The broker's user a connection belongs to, as its identity provider names them. */
export interface SubjectRef {
  iss: string;
  sub: string;
}

interface ConnectionRef {
  connectionId: string;
  provider: string;
  subject: SubjectRef;
}

export type WebhookEvent =
  | {
      type: 'connection.created';
      /** `account`: who the user is at the provider (its id, and its name where the provider gives one). */
      data: ConnectionRef & { navigationId: string; account?: { id: string; name?: string } };
    }
  | {
      type: 'connection.needs_reauth';
      /** `reason`: a code name (needsReauthEvent). */
      data: Omit<ConnectionRef, 'connectionId'> & { connectionId?: string; reason: string };
    }
  | { type: 'connection.revoked'; data: ConnectionRef }
  | {
      type: 'operation.needs_operator';
      /** `reason`: a code name, e.g. not_replayable (the provider cannot dedupe a re-drive), key_missing. */
      data: { receiptId: string; navigationId: string; tool: string; provider: string; reason: string };
    };

/**
 * The event of a connection whose user must connect again; `reason` names the move that ended it, as
 * secrets/connectionStates.ts does (token_refused, refresh_refused, expired, key_missing, issuer_changed).
 */
export const needsReauthEvent = (
  connection: { id: string | undefined; provider: string; subject: SubjectRef },
  reason: string,
  occurredAt: Date,
): WebhookEvent & { occurredAt: Date } => ({
  type: 'connection.needs_reauth',
  data: {
    ...(connection.id !== undefined && { connectionId: connection.id }),
    provider: connection.provider,
    subject: { iss: connection.subject.iss, sub: connection.subject.sub },
    reason,
  },
  occurredAt,
});

/** An event as the outbox holds it and the receiver gets it (the POST body is exactly this, as JSON). */
export interface WebhookMessage {
  id: string;
  type: WebhookEventType;
  occurredAt: string;
  data: Record<string, unknown>;
}

/** The `data` column read back: an object of JSON values (what was written is typed by WebhookEvent). */
export const webhookDataSchema = z.record(z.string(), z.json());
