import { randomUUID } from 'node:crypto';
import { statementText, type Alongside } from '../db/alongside.js';
import type { Queryable } from '../db/pool.js';
import {
  webhookDataSchema,
  webhookEventStates,
  type WebhookEvent,
  type WebhookEventState,
  type WebhookMessage,
} from './webhookEvent.js';

// The SQL of webhook_events (migrations/0014_webhook_events.sql), the transactional outbox. Each
// function but enqueueEvent is one statement on the pool, so each is its own short transaction:
// nothing here keeps a row locked, or a pooled connection, while a POST is on its way.

/** How long a row is kept after its change, whatever became of it (the sweep deletes it then). */
export const WEBHOOK_RETENTION_MS = 7 * 24 * 3600_000;

interface Row {
  id: string;
  type: WebhookMessage['type'];
  data: unknown;
  occurred_at: Date;
  attempts: number;
}

/** A row claimed for one attempt: the message, and the attempt number its outcome is recorded against. */
export interface ClaimedEvent {
  message: WebhookMessage;
  attempt: number;
}

const fromRow = (r: Row): ClaimedEvent => ({
  message: { id: r.id, type: r.type, occurredAt: r.occurred_at.toISOString(), data: webhookDataSchema.parse(r.data) },
  attempt: r.attempts,
});

/**
 * Writes `event` to the outbox in the caller's transaction, the one that makes the change it
 * reports: it is delivered if and only if that transaction commits. Returns the event's id (the
 * receiver's Webhook-Id).
 */
export async function enqueueEvent(tx: Queryable, event: WebhookEvent & { occurredAt: Date }): Promise<string> {
  const write = enqueueEventAlongside(event);
  await tx.query(statementText(write), write.values);
  return write.values[0] as string;
}

/** enqueueEvent as a write beside another statement's, the change it announces. */
export function enqueueEventAlongside(event: WebhookEvent & { occurredAt: Date }): Alongside {
  return {
    text: (p) =>
      `INSERT INTO webhook_events (id, type, data, occurred_at, next_attempt_at, expires_at)
       VALUES (${p(1)}::uuid, ${p(2)}, ${p(3)}::jsonb, ${p(4)}::timestamptz, ${p(4)}::timestamptz, ${p(5)}::timestamptz)`,
    values: [
      randomUUID(),
      event.type,
      JSON.stringify(event.data),
      event.occurredAt,
      new Date(event.occurredAt.getTime() + WEBHOOK_RETENTION_MS),
    ],
  };
}

/**
 * Claims up to `limit` due rows for one attempt each: counts the attempt and moves the row's next
 * attempt to `leaseUntil`, so no other instance takes it while this one posts it, and one that died
 * posting it leaves it to the next claim after the lease. SKIP LOCKED: instances claiming at once
 * take different rows. Rows that used up `maxAttempts` are left to giveUpExhausted.
 */
export async function claimDueEvents(
  db: Queryable,
  now: Date,
  leaseUntil: Date,
  limit: number,
  maxAttempts: number,
): Promise<ClaimedEvent[]> {
  const { rows } = await db.query<Row>(
    `UPDATE webhook_events e SET attempts = e.attempts + 1, next_attempt_at = $2
       FROM (SELECT id FROM webhook_events
              WHERE state = 'pending' AND next_attempt_at <= $1 AND attempts < $4
              ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) due
      WHERE e.id = due.id
      RETURNING e.id, e.type, e.data, e.occurred_at, e.attempts`,
    [now, leaseUntil, limit, maxAttempts],
  );
  return rows.map(fromRow).sort((a, b) => (a.message.occurredAt < b.message.occurredAt ? -1 : 1));
}

/** The receiver accepted attempt `attempt`; false when the row moved on meanwhile (its lease ran out and another claim took it). */
export async function markDelivered(db: Queryable, id: string, attempt: number, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_events SET state = 'delivered', delivered_at = $3, last_error = NULL
      WHERE id = $1 AND state = 'pending' AND attempts = $2`,
    [id, attempt, now],
  );
  return rowCount === 1;
}

/**
 * Attempt `attempt` failed with `error` (a status or an error's code, never the receiver's body):
 * the row is due again at `retryAt`, or, without one, dead. Compare-and-set on the attempt, as
 * markDelivered.
 */
export async function markFailed(
  db: Queryable,
  id: string,
  attempt: number,
  error: string,
  retryAt: Date | undefined,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_events
        SET last_error = $3, state = CASE WHEN $4::timestamptz IS NULL THEN 'dead' ELSE 'pending' END,
            next_attempt_at = coalesce($4, next_attempt_at)
      WHERE id = $1 AND state = 'pending' AND attempts = $2`,
    [id, attempt, error.slice(0, 200), retryAt ?? null],
  );
  return rowCount === 1;
}

/**
 * Rows whose last attempt was claimed but never recorded (the instance stopped mid-POST) and that
 * have no attempt left once its lease ran out: dead, as after a recorded last failure.
 */
export async function giveUpExhausted(db: Queryable, now: Date, maxAttempts: number): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE webhook_events
        SET state = 'dead', last_error = coalesce(last_error || '; ', '') || 'last attempt never recorded'
      WHERE id IN (SELECT id FROM webhook_events
                    WHERE state = 'pending' AND attempts >= $2 AND next_attempt_at <= $1 FOR UPDATE SKIP LOCKED)`,
    [now, maxAttempts],
  );
  return rowCount ?? 0;
}

/** How many rows each state holds (every state listed, 0 included): what operators see on /ops. */
export async function countEventsByState(db: Queryable): Promise<Record<WebhookEventState, number>> {
  const { rows } = await db.query<{ state: WebhookEventState; n: string }>(
    'SELECT state, count(*) AS n FROM webhook_events GROUP BY state',
  );
  const counts = Object.fromEntries(webhookEventStates.map((s) => [s, 0])) as Record<WebhookEventState, number>;
  for (const r of rows) counts[r.state] = Number(r.n);
  return counts;
}
