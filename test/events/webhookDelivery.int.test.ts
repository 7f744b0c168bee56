import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createPool } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/transaction.js';
import {
  DEFAULT_DELIVERY_LIMITS,
  deliverDueEvents,
  startWebhookDelivery,
  type WebhookDeliveryDeps,
} from '../../src/events/webhookDelivery.js';
import type { WebhookEvent } from '../../src/events/webhookEvent.js';
import { countEventsByState, enqueueEvent } from '../../src/events/webhookOutboxRepo.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// The outbox against a real HTTPS receiver on the test CA: what it is sent, how often, and what the
// table says afterwards. Time is the test's clock, so the backoff is read off the rows.

const SECRET = 'webhook-secret-for-the-delivery-tests-0123456789';
const subject = { iss: 'https://idp.test', sub: 'alice' };

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  status: number;
}

describe('webhook delivery', () => {
  let db: TestDb;
  let dir: string;
  let tls: TlsMaterial;
  let receiver: HttpsTestServer;
  let received: Received[];
  let now: Date;
  let deps: WebhookDeliveryDeps;

  beforeAll(async () => {
    db = await createTestDb();
    dir = await mkdtemp(join(tmpdir(), 'webhooks-'));
    tls = await loadOrCreateLocalTls(join(dir, 'tls'));
    receiver = await listenHttps(tls);
  });
  afterAll(async () => {
    await receiver?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await db.pool.query('DELETE FROM webhook_events');
    received = [];
    now = new Date();
    // The receiver's URL and secret as a deployment gives them: through loadConfig and its URL policy.
    const { webhook } = loadConfig({
      NODE_ENV: 'test',
      WEBHOOK_URL: `${receiver.origin}/hooks`,
      WEBHOOK_SECRET: SECRET,
    });
    deps = {
      pool: db.pool,
      fetch: createFetch({ extraCaPems: [tls.caPem] }),
      clock: { now: () => now },
      logger: createLogger({ level: 'silent' }),
      webhook: webhook!,
    };
  });

  /** Answers each request with `answer(request, how many earlier requests carried its Webhook-Id)`. */
  const receive = (answer: (req: IncomingMessage, seen: number, res: ServerResponse) => number | undefined) =>
    receiver.setHandler((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
        const seen = received.filter((r) => r.headers['webhook-id'] === headers['webhook-id']).length;
        const status = answer(req, seen, res);
        received.push({
          path: req.url ?? '',
          headers,
          body: Buffer.concat(chunks).toString('utf8'),
          status: status ?? 0,
        });
        if (status !== undefined) res.writeHead(status).end();
      });
    });
  const created = (connectionId: string): WebhookEvent => ({
    type: 'connection.created',
    data: { connectionId, provider: 'reports', subject, navigationId: '00000000-0000-4000-8000-000000000001' },
  });
  const rowOf = async (id: string) =>
    (await db.pool.query('SELECT state, attempts, next_attempt_at, last_error FROM webhook_events WHERE id = $1', [id]))
      .rows[0];
  const later = (ms: number) => {
    now = new Date(now.getTime() + ms);
  };

  it('delivers each committed event once, signed, after the receiver refused it twice, waiting longer after each refusal', async () => {
    receive((_req, seen) => (seen < 2 ? 500 : 204));
    const ids = await withTransaction(db.pool, async (tx) => [
      await enqueueEvent(tx, { ...created('c-1'), occurredAt: now }),
      await enqueueEvent(tx, {
        type: 'operation.needs_operator',
        data: {
          receiptId: 'r-1',
          navigationId: 'n-1',
          tool: 'github_create_issue',
          provider: 'github',
          reason: 'not_replayable',
        },
        occurredAt: now,
      }),
    ]);
    // A change that rolled back: its event was written in its transaction, so it went with it.
    await expect(
      withTransaction(db.pool, async (tx) => {
        await enqueueEvent(tx, {
          type: 'connection.revoked',
          data: { connectionId: 'c-gone', provider: 'reports', subject },
          occurredAt: now,
        });
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');

    const first = now;
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 2, failed: 2, delivered: 0 });
    for (const id of ids) {
      const row = await rowOf(id);
      expect(row).toMatchObject({ state: 'pending', attempts: 1, last_error: 'HTTP 500' });
      // 10 s after the first refusal, jittered over its upper half.
      const wait = row.next_attempt_at.getTime() - first.getTime();
      expect(wait).toBeGreaterThanOrEqual(5_000);
      expect(wait).toBeLessThanOrEqual(10_000);
    }
    // Not due yet: nothing is sent.
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 0 });
    later(4_999);
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 0 });
    expect(received).toHaveLength(2);

    later(5_001);
    const second = now;
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 2, failed: 2 });
    for (const id of ids) {
      const wait = (await rowOf(id)).next_attempt_at.getTime() - second.getTime();
      expect(wait).toBeGreaterThanOrEqual(10_000);
      expect(wait).toBeLessThanOrEqual(20_000);
    }
    later(20_000);
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 2, delivered: 2 });
    later(24 * 3600_000);
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 0 });

    // Each event accepted once, by its id; the rolled-back one never sent.
    expect(received).toHaveLength(6);
    expect(
      received
        .filter((r) => r.status === 204)
        .map((r) => r.headers['webhook-id'])
        .sort(),
    ).toEqual([...ids].sort());
    expect(received.some((r) => r.body.includes('connection.revoked') || r.body.includes('c-gone'))).toBe(false);
    for (const r of received) {
      expect(r.path).toBe('/hooks');
      expect(r.headers['content-type']).toBe('application/json');
      // The receiver's check: the reference library, with the secret, over the raw body.
      const body = new Webhook(SECRET, { format: 'raw' }).verify(r.body, r.headers) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(['id', 'type', 'occurredAt', 'data']);
      expect(body['id']).toBe(r.headers['webhook-id']);
      expect(body['occurredAt']).toBe(first.toISOString());
      expect(() => new Webhook(`${SECRET}x`, { format: 'raw' }).verify(r.body, r.headers)).toThrow();
    }
    expect(JSON.parse(received.find((r) => r.headers['webhook-id'] === ids[0])!.body)).toEqual({
      id: ids[0],
      type: 'connection.created',
      occurredAt: first.toISOString(),
      data: created('c-1').data,
    });
    for (const id of ids) expect(await rowOf(id)).toMatchObject({ state: 'delivered', attempts: 3, last_error: null });
    expect(await countEventsByState(db.pool)).toEqual({ pending: 0, delivered: 2, dead: 0 });
  });

  // Rotating the secret: the receiver learns the new one while the broker still signs with the old,
  // or the other way round. During the overlap every delivery carries both signatures (Standard
  // Webhooks: several space-separated in webhook-signature), so a receiver with either accepts it.
  it('signs with the new and the previous secret during a rotation, so a receiver with either accepts the delivery', async () => {
    const previous = 'whsec_' + Buffer.from('the-previous-webhook-secret-0123456789').toString('base64');
    const { webhook } = loadConfig({
      NODE_ENV: 'test',
      WEBHOOK_URL: `${receiver.origin}/hooks`,
      WEBHOOK_SECRET: SECRET,
      WEBHOOK_SECRET_PREVIOUS: previous,
    });
    receive(() => 204);
    const id = await withTransaction(db.pool, (tx) => enqueueEvent(tx, { ...created('c-rot'), occurredAt: now }));
    expect(await deliverDueEvents({ ...deps, webhook: webhook! })).toMatchObject({ claimed: 1, delivered: 1 });
    const [delivery] = received;
    expect(delivery!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(SECRET, { format: 'raw' }).verify(delivery!.body, delivery!.headers)).toMatchObject({ id });
    expect(new Webhook(previous).verify(delivery!.body, delivery!.headers)).toMatchObject({ id });
    expect(() => new Webhook(`${SECRET}x`, { format: 'raw' }).verify(delivery!.body, delivery!.headers)).toThrow();
  });

  it('gives an event up as dead after its last attempt, and sends it no more', async () => {
    receive(() => 503);
    const id = await withTransaction(db.pool, (tx) => enqueueEvent(tx, { ...created('c-2'), occurredAt: now }));
    const waits: number[] = [];
    for (let attempt = 1; attempt <= DEFAULT_DELIVERY_LIMITS.maxAttempts; attempt++) {
      expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 1 });
      const row = await rowOf(id);
      expect(row.attempts).toBe(attempt);
      if (row.state !== 'pending') break;
      waits.push(row.next_attempt_at.getTime() - now.getTime());
      now = row.next_attempt_at;
    }
    expect(await rowOf(id)).toMatchObject({
      state: 'dead',
      attempts: DEFAULT_DELIVERY_LIMITS.maxAttempts,
      last_error: 'HTTP 503',
    });
    later(24 * 3600_000);
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 0 });
    expect(received).toHaveLength(DEFAULT_DELIVERY_LIMITS.maxAttempts);
    // The waits doubled up to the cap (an hour), each jittered over its upper half.
    expect(waits).toHaveLength(DEFAULT_DELIVERY_LIMITS.maxAttempts - 1);
    waits.forEach((wait, i) => {
      const step = Math.min(3_600_000, 10_000 * 2 ** i);
      expect(wait).toBeGreaterThanOrEqual(step / 2);
      expect(wait).toBeLessThanOrEqual(step);
    });
    expect(await countEventsByState(db.pool)).toEqual({ pending: 0, delivered: 0, dead: 1 });
  });

  it('counts a redirect as a failure and does not follow it', async () => {
    receive((req, _seen, res) => {
      if (req.url === '/elsewhere') return 204;
      res.setHeader('location', `${receiver.origin}/elsewhere`);
      return 307;
    });
    const id = await withTransaction(db.pool, (tx) => enqueueEvent(tx, { ...created('c-3'), occurredAt: now }));
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 1, failed: 1 });
    expect(await rowOf(id)).toMatchObject({ state: 'pending', last_error: 'redirect (307) not followed' });
    expect(received.map((r) => r.path)).toEqual(['/hooks']);
  });

  it('gives up on a receiver that does not answer within the timeout', async () => {
    receive(() => undefined);
    const id = await withTransaction(db.pool, (tx) => enqueueEvent(tx, { ...created('c-4'), occurredAt: now }));
    expect(await deliverDueEvents(deps, { timeoutMs: 300 })).toMatchObject({ claimed: 1, failed: 1 });
    expect(await rowOf(id)).toMatchObject({ state: 'pending', attempts: 1, last_error: 'no answer within 300 ms' });
  });

  it('holds no row lock and no pooled connection while a POST is on its way, and another instance does not take the event meanwhile', async () => {
    let answer: (() => void) | undefined;
    const arrived = new Promise<void>((resolve) =>
      receive((_req, _seen, res) => {
        answer = () => res.writeHead(204).end();
        resolve();
        return undefined;
      }),
    );
    const id = await withTransaction(db.pool, (tx) => enqueueEvent(tx, { ...created('c-5'), occurredAt: now }));
    // One connection in the pool: a pass that kept it through the POST would block every query below.
    const single = createPool({ url: db.url, poolMax: 1, schema: db.schema }, createLogger({ level: 'silent' }));
    try {
      const pass = deliverDueEvents({ ...deps, pool: single });
      await arrived;
      const locked = await single.query('SELECT id FROM webhook_events WHERE id = $1 FOR UPDATE NOWAIT', [id]);
      expect(locked.rows).toHaveLength(1);
      // A second instance, at the same moment: the event is leased to the first.
      expect(await deliverDueEvents({ ...deps, pool: db.newPool() })).toMatchObject({ claimed: 0 });
      answer!();
      expect(await pass).toMatchObject({ claimed: 1, delivered: 1 });
    } finally {
      await single.end();
    }
    expect(received).toHaveLength(1);
    expect(await rowOf(id)).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it('drains a backlog larger than a batch from two instances at once, each event sent once', async () => {
    receive(() => 204);
    const ids = await withTransaction(db.pool, async (tx) => {
      const written: string[] = [];
      for (let i = 0; i < 23; i++) written.push(await enqueueEvent(tx, { ...created(`c-b${i}`), occurredAt: now }));
      return written;
    });
    const instances = [db.pool, db.newPool()].map((pool) =>
      startWebhookDelivery({ ...deps, pool }, { pollMs: 20, limits: { batch: 5 } }),
    );
    try {
      await vi.waitFor(async () => expect((await countEventsByState(db.pool)).delivered).toBe(23), { timeout: 10_000 });
    } finally {
      await Promise.all(instances.map((i) => i.stop()));
    }
    expect(received.map((r) => r.headers['webhook-id']).sort()).toEqual([...ids].sort());
  });

  it('sends again, with the same id, an event whose instance stopped mid-POST once its lease ran out; with no attempt left it is dead', async () => {
    receive(() => 204);
    const [resent, spent] = await withTransaction(db.pool, async (tx) => [
      await enqueueEvent(tx, { ...created('c-6'), occurredAt: now }),
      await enqueueEvent(tx, { ...created('c-7'), occurredAt: now }),
    ]);
    // Instances claimed an attempt of each (the first, and the last one of the other), then stopped
    // before recording anything: each row is leased as a claim leaves it.
    const leaseUntil = new Date(now.getTime() + 40_000);
    const claimedAs = 'UPDATE webhook_events SET attempts = $2, next_attempt_at = $3 WHERE id = $1';
    await db.pool.query(claimedAs, [resent, 1, leaseUntil]);
    await db.pool.query(claimedAs, [spent, DEFAULT_DELIVERY_LIMITS.maxAttempts, leaseUntil]);
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 0, dead: 0 });
    later(40_000);
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 1, delivered: 1, dead: 1 });
    expect(await rowOf(resent)).toMatchObject({ state: 'delivered', attempts: 2 });
    expect(await rowOf(spent)).toMatchObject({ state: 'dead', last_error: 'last attempt never recorded' });
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([resent]);
  });
});
