import nock from 'nock';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { deliverDueEvents, type WebhookDeliveryDeps } from '../../src/events/webhookDelivery.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import {
  consentAndAuthorize,
  elicitConnection,
  GITHUB_FORMS,
  openConnectLink,
  retryConnection,
  URL_CAPS,
} from '../support/connectFlow.js';
import { connectThroughList, killStoredToken, secretsBox } from '../support/deadToken.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';
import { newKey } from '../support/sealedKeys.js';
import { callTool } from '../support/mcpWire.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The events the broker's own use cases write, through the real stack, as a receiver gets them:
// a connect flow's verified callback, the provider's 401 that forgets the connection, and a
// re-drive only an operator may decide. Each is written in the transaction of its change and
// posted to a real HTTPS receiver; none carries a token.

const SECRET = `whsec_${Buffer.alloc(32, 42).toString('base64')}`;

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

describe('webhook events of the broker', () => {
  // The stack's settings name a webhook, as a deployment's do (/ops counts its events); the test
  // delivers them itself (deliverDueEvents) to its own receiver.
  const { stack, tokens } = useBrokerStack(
    {
      webhook: loadConfig({ NODE_ENV: 'test', WEBHOOK_URL: 'https://127.0.0.1:9/events', WEBHOOK_SECRET: SECRET })
        .webhook,
    },
    { users: ['alice', 'bob'] },
  );
  let receiver: HttpsTestServer;
  let deliveries: Delivery[];
  let status = 204;
  let deps: WebhookDeliveryDeps;

  beforeAll(async () => {
    receiver = await listenHttps(stack.tls);
    receiver.setHandler((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
        deliveries.push({ headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(status).end();
      });
    });
    const { webhook } = loadConfig({
      NODE_ENV: 'test',
      WEBHOOK_URL: `${receiver.origin}/events`,
      WEBHOOK_SECRET: SECRET,
    });
    deps = {
      pool: stack.db.pool,
      fetch: stack.fetch,
      clock: systemClock,
      logger: createLogger({ level: 'silent' }),
      webhook: webhook!,
    };
  });
  afterAll(async () => {
    await receiver?.close();
  });
  beforeEach(() => {
    deliveries = [];
    status = 204;
  });
  afterEach(() => {
    nock.cleanAll();
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  /** What the receiver got, each verified as a receiver would (the reference library, the secret). */
  const received = () =>
    deliveries.map(
      (d) =>
        new Webhook(SECRET).verify(d.body, d.headers) as { id: string; type: string; data: Record<string, unknown> },
    );

  it('posts a verified connection, then its needs_reauth after the provider refused its token, with ids and names and never a token', async () => {
    await connectThroughList(stack, tokens.alice, 'alice');
    const [connection] = await query(
      "SELECT id, navigation_id, upstream_subject FROM connections WHERE subject_sub = 'alice'",
    );
    // Every token the vault held for alice, and the refused one that replaces the access token.
    const held = await query("SELECT * FROM secrets WHERE subject_sub = 'alice'");
    const box = secretsBox(stack);
    const stored = held.map((s) =>
      box.open(
        { ciphertext: s.ciphertext, keyId: s.key_id },
        `${s.subject_iss}\nalice\n${s.provider}\n${s.kind}\n${s.connection_id}`,
      ),
    );
    expect(stored.length).toBeGreaterThan(0);
    const killed = await killStoredToken(stack, 'alice');
    const asked = await callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS);
    expect(asked.json.result).toMatchObject({ resultType: 'input_required' });

    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 2, delivered: 2 });
    // Posted side by side: in either order.
    const events = received().sort((a, b) => (a.type < b.type ? -1 : 1));
    const subject = { iss: stack.dev.idp.issuer, sub: 'alice' };
    expect(events.map((e) => e.type)).toEqual(['connection.created', 'connection.needs_reauth']);
    expect(events[0]!.data).toEqual({
      connectionId: connection.id,
      provider: 'reports',
      subject,
      navigationId: connection.navigation_id,
      account: { id: connection.upstream_subject },
    });
    expect(events[1]!.data).toEqual({
      connectionId: connection.id,
      provider: 'reports',
      subject,
      reason: 'token_refused',
    });
    // The canary: no token the vault held or the provider refused, whole or in part, in any delivery.
    const canaries = [...stored, killed.live, killed.dead].flatMap((t) => [
      t,
      ...t.split('.').filter((p) => p.length > 16),
    ]);
    for (const d of deliveries) {
      const text = `${JSON.stringify(d.headers)}\n${d.body}`;
      expect(canaries.filter((c) => text.includes(c))).toEqual([]);
    }
  });

  it('posts an operation only an operator may re-drive, once however many sweeps find it', async () => {
    const args = { repository: 'bob/demo', title: 'Answer lost, operator decides' };
    const elicited = await elicitConnection(stack, tokens.bob, 'github_create_issue', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'bob'), 'bob', 'Allow', GITHUB_FORMS);
    nock(stack.dev.github!.origin, { allowUnmocked: true })
      .post('/api/v3/repos/bob/demo/issues')
      .replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    await retryConnection(stack, tokens.bob, 'github_create_issue', args, elicited.requestState, 'accept');
    const [receipt] = await query("SELECT id, navigation_id FROM operation_receipts WHERE outcome_status = 'pending'");
    await deliverDueEvents(deps); // bob's connection.created
    deliveries = [];

    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 1 });
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 1, delivered: 1 });
    expect(received()).toEqual([
      expect.objectContaining({
        type: 'operation.needs_operator',
        data: {
          receiptId: receipt.id,
          navigationId: receipt.navigation_id,
          tool: 'github_create_issue',
          provider: 'github',
          reason: 'not_replayable',
        },
      }),
    ]);
  });

  it('posts needs_reauth when the provider refuses the refresh of an expired token', async () => {
    await connectThroughList(stack, tokens.bob, 'bob');
    await deliverDueEvents(deps); // bob's connection.created
    deliveries = [];
    const [connection] = await query("SELECT id FROM connections WHERE subject_sub = 'bob' AND provider = 'reports'");
    // The grant ends at the Report Service (its refresh token revoked), and the access token expires.
    const [sealed] = await query("SELECT * FROM secrets WHERE subject_sub = 'bob' AND kind = 'refresh_token'");
    const refreshToken = secretsBox(stack).open(
      { ciphertext: sealed.ciphertext, keyId: sealed.key_id },
      `${sealed.subject_iss}\nbob\nreports\nrefresh_token\n${sealed.connection_id}`,
    );
    const client = `${stack.dev.reports.brokerClientId}:${stack.secrets.brokerReportsClientSecret}`;
    const revoked = await stack.fetch(`${stack.dev.reports.issuer}/token/revocation`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(client).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token: refreshToken, token_type_hint: 'refresh_token' }),
    });
    expect(revoked.status).toBe(200);
    await query(
      "UPDATE secrets SET expires_at = now() - interval '1 minute' WHERE subject_sub = 'bob' AND kind = 'access_token'",
    );

    const asked = await callTool(stack, tokens.bob, 'reports_list', {}, {}, URL_CAPS);
    expect(asked.json.result).toMatchObject({ resultType: 'input_required' });
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 1, delivered: 1 });
    expect(received()).toEqual([
      expect.objectContaining({
        type: 'connection.needs_reauth',
        data: {
          connectionId: connection.id,
          provider: 'reports',
          subject: { iss: stack.dev.idp.issuer, sub: 'bob' },
          reason: 'refresh_refused',
        },
      }),
    ]);
    expect(deliveries.some((d) => d.body.includes(refreshToken))).toBe(false);
  });

  it('posts an operation whose kept arguments no configured key opens as needing an operator, and the connection no key opens as needing the user (key_missing)', async () => {
    await connectThroughList(stack, tokens.alice, 'alice');
    const [receipt] = await query(
      `SELECT r.id, r.navigation_id FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id
        WHERE n.subject_sub = 'alice' ORDER BY r.created_at DESC LIMIT 1`,
    );
    // Its outcome unknown, as after a crash between acceptance and outcome; then every key is replaced.
    await query("UPDATE operation_receipts SET outcome_status = 'pending', outcome = NULL WHERE id = $1", [receipt.id]);
    await stack.restartWithKeys([newKey('only-new')]);
    await deliverDueEvents(deps); // alice's connection.created
    deliveries = [];

    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 1 });
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
    const asked = await callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS);
    expect(asked.json.result).toMatchObject({ resultType: 'input_required' });
    expect(await deliverDueEvents(deps)).toMatchObject({ claimed: 2, delivered: 2 });
    const [connection] = await query("SELECT id FROM connections WHERE subject_sub = 'alice' AND provider = 'reports'");
    expect(received().sort((a, b) => (a.type < b.type ? -1 : 1))).toEqual([
      expect.objectContaining({
        type: 'connection.needs_reauth',
        data: {
          connectionId: connection.id,
          provider: 'reports',
          subject: { iss: stack.dev.idp.issuer, sub: 'alice' },
          reason: 'key_missing',
        },
      }),
      expect.objectContaining({
        type: 'operation.needs_operator',
        data: {
          receiptId: receipt.id,
          navigationId: receipt.navigation_id,
          tool: 'reports_list',
          provider: 'reports',
          reason: 'key_missing',
        },
      }),
    ]);
  });

  it('shows operators on /ops how many events were given up', async () => {
    status = 500;
    await connectThroughList(stack, tokens.bob, 'bob');
    expect(await deliverDueEvents(deps, { maxAttempts: 1 })).toMatchObject({ claimed: 1, dead: 1 });
    const [{ n }] = await query("SELECT count(*)::int AS n FROM webhook_events WHERE state = 'dead'");
    const ops = createTestBrowser({ fetch: stack.fetch });
    const form = await ops.get(`${stack.brokerUrl}/login?return_to=/ops`);
    const dashboard = await ops.submitForm(form, { login: 'ops', password: DEV_PASSWORD });
    expect(dashboard.status).toBe(200);
    expect(dashboard.text).toContain(`<strong>${n}</strong> webhook events given up`);
  });
});
