import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerDeps } from '../../src/broker/brokerDeps.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { refreshExpiring } from '../../src/jobs/proactiveRefresh.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { accessTokenFor } from '../../src/secrets/tokenVault.js';
import { systemClock } from '../../src/shared/clock.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import type { UpstreamClient } from '../../src/upstream/upstreamClient.js';
import { IssuerChangedError } from '../../src/errors/upstreamErrors.js';
import { sampleValue } from '../support/metricsText.js';
import { operatorCli } from '../support/operatorCli.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { startUpstreamMcp, UPSTREAM_SCOPE, type UpstreamMcp } from '../support/upstreamMcp.js';
import { reportServiceProvider } from '../../src/dev/devStack.js';
import { connectUpstream, upstreamBroker } from '../support/upstreamBroker.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A compromised upstream MCP server changes its Protected Resource Metadata (RFC 9728) to name an
// authorization server it controls, between a user's connect and the next refresh. The broker keeps
// the authorization server it pinned (on first use, or the entry's declared issuer), sends that
// server nothing (no refresh token, no client secret, no registration, not even a metadata read),
// ends the upstream's connections and records the change; an operator re-pins with the CLI.

let notes: UpstreamMcp;
let fixed: UpstreamMcp;
let rogue: UpstreamMcp;

const entries = () => [
  { id: 'notes-pinned', kind: 'mcp', url: notes.url, prefix: 'pinned', registration: 'auto' },
  {
    id: 'notes-fixed',
    kind: 'mcp',
    url: fixed.url,
    prefix: 'fixed',
    registration: 'static',
    clientId: fixed.staticClient.id,
    clientSecret: { env: 'NOTES_FIXED_SECRET' },
    scopes: [UPSTREAM_SCOPE],
    issuer: fixed.issuer,
  },
];
const readEnv = (name: string) => (name === 'NOTES_FIXED_SECRET' ? fixed.staticClient.secret : undefined);

describe('authorization server pins: a changed upstream metadata gets nothing', () => {
  const { stack } = useBrokerStack({
    extraProviders: async ({ brokerUrl, tls }) => {
      const fetch = createFetch({ extraCaPems: [tls.caPem] });
      [notes, fixed, rogue] = await Promise.all([
        startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge' }),
        startUpstreamMcp({
          tls,
          fetch,
          registration: 'static',
          metadata: 'path',
          staticRedirectUri: `${brokerUrl}/oauth/callback/notes-fixed`,
        }),
        // The server the compromised metadata names: it would take DCR and documents, and answer refreshes.
        startUpstreamMcp({ tls, fetch, registration: 'dcr', metadata: 'path' }),
      ]);
      return entries().map((e) => (e.id === 'notes-fixed' ? { ...e, clientSecret: fixed.staticClient.secret } : e));
    },
  });
  const alice = () => ({ iss: stack.dev.idp.issuer, sub: 'alice' });
  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;

  // An instance of the broker on the stack's database, built as the server builds its own: a new one
  // is a restart, which discovers each upstream again.
  const instance = (fetch: Fetch = stack.fetch): BrokerDeps =>
    upstreamBroker(stack, [reportServiceProvider(stack.dev, stack.secrets), ...entries()], { readEnv, fetch });

  async function connect(deps: BrokerDeps, provider: string) {
    const { navigation, done } = await connectUpstream(stack, deps, provider);
    expect(done.status).toBe(200);
    const [connection] = await query('SELECT id, issuer, state FROM connections WHERE provider = $1', [provider]);
    return { navigationId: navigation.id, connection };
  }
  const expireAccessToken = (connectionId: string) =>
    query(
      "UPDATE secrets SET expires_at = now() - interval '1 minute' WHERE connection_id = $1 AND kind = 'access_token'",
      [connectionId],
    );
  const pinOf = async (provider: string) =>
    (await query('SELECT * FROM authorization_server_pins WHERE provider = $1', [provider]))[0];

  afterAll(async () => {
    await Promise.all([notes?.close(), fixed?.close(), rogue?.close()]);
  });

  describe('pinned on first use (registration: auto)', () => {
    let navigationId: string;
    let connectionId: string;
    beforeAll(async () => {
      const connected = await connect(instance(), 'notes-pinned');
      navigationId = connected.navigationId;
      connectionId = connected.connection.id;
      expect(connected.connection).toMatchObject({ issuer: notes.issuer, state: 'active' });
      expect(await pinOf('notes-pinned')).toMatchObject({
        issuer: notes.issuer,
        pinned_by: 'first_use',
        changed_to: null,
        endpoints: { tokenEndpoint: expect.stringContaining(notes.issuer) },
      });
    });

    it('the proactive refresh after a restart sends the rogue server nothing, ends the connection and records the change', async () => {
      notes.authorizationServers = [rogue.issuer];
      await expireAccessToken(connectionId);
      const refreshesBefore = notes.tokenRequests.length;

      const result = await refreshExpiring(instance(), createLogger({ level: 'silent' }), {
        horizonMs: 60_000,
        batch: 50,
        concurrency: 1,
      });

      expect(result).toMatchObject({ refreshed: 0, needsReauth: 1 });
      // No request at all reached the server the metadata names now, and the pinned one was sent no token either.
      expect(rogue.authRequests).toEqual([]);
      expect(notes.tokenRequests.length).toBe(refreshesBefore);
      expect(await query('SELECT state FROM connections WHERE id = $1', [connectionId])).toEqual([
        { state: 'needs_reauth' },
      ]);
      expect(await query('SELECT kind FROM secrets WHERE connection_id = $1', [connectionId])).toEqual([]);
      expect(await pinOf('notes-pinned')).toMatchObject({ issuer: notes.issuer, changed_to: rogue.issuer });
      expect(
        await query(
          "SELECT actor, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_issuer_changed'",
          [navigationId],
        ),
      ).toEqual([
        {
          actor: 'system:vault',
          evidence: { connectionId, provider: 'notes-pinned', pinnedIssuer: notes.issuer, namedIssuer: rogue.issuer },
        },
      ]);
      expect(
        await query(
          "SELECT data FROM webhook_events WHERE type = 'connection.needs_reauth' AND data->>'connectionId' = $1",
          [connectionId],
        ),
      ).toEqual([
        {
          data: {
            connectionId,
            provider: 'notes-pinned',
            subject: alice(),
            reason: 'issuer_changed',
          },
        },
      ]);
    });

    it('a new connection is refused too, before any request reaches the rogue server', async () => {
      const client = instance().providers.get('notes-pinned') as UpstreamClient;
      await expect(client.resolve()).rejects.toBeInstanceOf(IssuerChangedError);
      expect(rogue.authRequests).toEqual([]);
    });

    it('the change is on /metrics and on the upstream row of /ops', async () => {
      const metrics = createMetrics({
        pool: stack.db.pool,
        logger: createLogger({ level: 'silent' }),
        processMetrics: false,
      });
      const text = await metrics.registry.metrics();
      expect(sampleValue(text, 'broker_authorization_server_changed', { provider: 'notes-pinned' })).toBe(1);
      expect(sampleValue(text, 'broker_authorization_server_changed', { provider: 'notes-fixed' })).toBeUndefined();

      const ops = createTestBrowser({ fetch: stack.fetch });
      const form = await ops.get(`${stack.brokerUrl}/login?return_to=/ops`);
      const page = await ops.submitForm(form, { login: 'ops', password: DEV_PASSWORD });
      expect(page.status).toBe(200);
      const row = page.text.match(/<tr class="upstream" data-upstream="notes-pinned">([\s\S]*?)<\/tr>/)?.[1] ?? '';
      expect(row.replace(/<[^>]+>/g, '')).toContain(
        `its metadata names ${rogue.issuer}. Nothing is sent to it and its users must reconnect; re-pin with broker upstreams repin notes-pinned --reason …`,
      );
      expect(row).toContain(`authorization server ${notes.issuer} (pinned by first_use)`);
    });

    it('broker upstreams check reports the change; repin by the CLI needs a reason, re-pins and is recorded', async () => {
      const file = join(stack.dataDir, 'pinned-upstreams.json');
      await writeFile(file, JSON.stringify(entries()));
      const cli = await operatorCli(stack, 'ops', {
        command: 'upstreams',
        env: { PROVIDERS_FILE: file, NOTES_FIXED_SECRET: fixed.staticClient.secret },
      });
      const checked = await cli('check', '--json');
      expect(checked.code).toBe(1);
      const checks = JSON.parse(checked.output.split('\n').find((l) => l.startsWith('['))!) as { id: string }[];
      expect(checks.find((c) => c.id === 'notes-pinned')).toEqual({
        id: 'notes-pinned',
        ok: false,
        step: 'authorization_server',
        result: `its metadata names the authorization server ${rogue.issuer}, not the pinned ${notes.issuer}; nothing is sent to it until an operator re-pins (broker upstreams repin notes-pinned --reason ...)`,
      });
      expect(rogue.authRequests).toEqual([]);

      const unexplained = await cli('repin', 'notes-pinned');
      expect(unexplained.code).toBe(2);
      expect(unexplained.output).toContain('A re-pin needs --reason');
      expect((await pinOf('notes-pinned')).issuer).toBe(notes.issuer);

      const repinned = await cli('repin', 'notes-pinned', '--reason', 'moved to the new tenant');
      expect(repinned.output).toContain(`Pinned notes-pinned to the authorization server ${rogue.issuer}`);
      expect(repinned.code).toBe(0);
      expect(await pinOf('notes-pinned')).toMatchObject({
        issuer: rogue.issuer,
        changed_to: null,
        pinned_by: 'cli:ops',
      });
      expect(
        await query("SELECT reason, actor, details FROM operator_actions WHERE action = 'repin_authorization_server'"),
      ).toEqual([
        {
          reason: 'moved to the new tenant',
          actor: 'cli:ops',
          details: { provider: 'notes-pinned', from: notes.issuer, to: rogue.issuer, changedTo: rogue.issuer },
        },
      ]);
      // Re-pinned: the upstream resolves against the server the operator chose.
      const resolved = await (instance().providers.get('notes-pinned') as UpstreamClient).resolve();
      expect(resolved.provider.issuer).toBe(rogue.issuer);
    });
  });

  describe('a catalog provider whose endpoints come from discovery (the Report Service)', () => {
    it('pins them on first use; endpoints other than the pinned ones get no refresh token, the connection ends', async () => {
      const { connection } = await connect(instance(), 'reports');
      const reportsIssuer = stack.dev.reports.issuer;
      expect(connection).toMatchObject({ issuer: reportsIssuer, state: 'active' });
      const pinned = await pinOf('reports');
      expect(pinned).toMatchObject({ issuer: reportsIssuer, pinned_by: 'first_use', changed_to: null });
      // What a pin made before the provider's metadata changed holds: other endpoints than it names now.
      await query(
        "UPDATE authorization_server_pins SET endpoints = jsonb_set(endpoints, '{tokenEndpoint}', '\"https://elsewhere.example/token\"') WHERE provider = 'reports'",
      );
      await expireAccessToken(connection.id);
      const sent: string[] = [];
      const tapped = instance((url, init) => {
        if (String(url) === pinned.endpoints.tokenEndpoint) sent.push(String(url));
        return stack.fetch(url, init);
      });

      expect(await accessTokenFor({ ...tapped, clock: systemClock }, alice(), 'reports')).toBeUndefined();

      expect(sent).toEqual([]);
      expect(await query('SELECT state FROM connections WHERE id = $1', [connection.id])).toEqual([
        { state: 'needs_reauth' },
      ]);
      expect(await pinOf('reports')).toMatchObject({ issuer: reportsIssuer, changed_to: reportsIssuer });
      expect(
        await query(
          "SELECT data->>'reason' AS reason FROM webhook_events WHERE type = 'connection.needs_reauth' AND data->>'connectionId' = $1",
          [connection.id],
        ),
      ).toEqual([{ reason: 'issuer_changed' }]);
    });
  });

  describe('declared by the operator (registration: static, issuer)', () => {
    it("a user's refresh after the metadata changed sends neither the refresh token nor the client secret anywhere", async () => {
      const { connection } = await connect(instance(), 'notes-fixed');
      expect(connection).toMatchObject({ issuer: fixed.issuer, state: 'active' });
      expect(await pinOf('notes-fixed')).toMatchObject({ issuer: fixed.issuer, pinned_by: 'config' });
      fixed.authorizationServers = [rogue.issuer];
      await expireAccessToken(connection.id);
      const rogueBefore = rogue.authRequests.length;
      const fixedTokenRequests = fixed.tokenRequests.length;

      expect(await accessTokenFor({ ...instance(), clock: systemClock }, alice(), 'notes-fixed')).toBeUndefined();

      expect(rogue.authRequests.slice(rogueBefore)).toEqual([]);
      expect(fixed.tokenRequests.length).toBe(fixedTokenRequests);
      expect(await query('SELECT state FROM connections WHERE id = $1', [connection.id])).toEqual([
        { state: 'needs_reauth' },
      ]);
      expect(await pinOf('notes-fixed')).toMatchObject({ issuer: fixed.issuer, changed_to: rogue.issuer });
    });
  });
});
