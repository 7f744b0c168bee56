import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerDeps } from '../../src/broker/brokerDeps.js';
import { accessTokenFor } from '../../src/secrets/tokenVault.js';
import { systemClock } from '../../src/shared/clock.js';
import { createFetch } from '../../src/shared/httpClient.js';
import type { UpstreamClient } from '../../src/upstream/upstreamClient.js';
import { UpstreamSetupError } from '../../src/errors/upstreamErrors.js';
import { connectUpstream, upstreamBroker } from '../support/upstreamBroker.js';
import { startUpstreamMcp, type UpstreamMcp } from '../support/upstreamMcp.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An upstream must never be given a token the broker itself would accept: one whose metadata names
// the broker's own identity provider is refused before that provider is asked anything, and an
// access token whose audience is not the upstream (an authorization server that ignores
// `resource`) is refused at the callback and at refresh, stored nowhere and sent nowhere.

let sharedIdp: UpstreamMcp;
let wrongAudience: UpstreamMcp;

const entries = () => [
  { id: 'shared-idp', kind: 'mcp', url: sharedIdp.url, prefix: 'sharedidp', registration: 'auto' },
  { id: 'wrong-aud', kind: 'mcp', url: wrongAudience.url, prefix: 'wrongaud', registration: 'auto' },
];

describe('upstreams that would take a token valid on the broker', () => {
  const { stack } = useBrokerStack({
    extraProviders: async ({ tls }) => {
      const fetch = createFetch({ extraCaPems: [tls.caPem] });
      [sharedIdp, wrongAudience] = await Promise.all([
        startUpstreamMcp({ tls, fetch, registration: 'dcr', metadata: 'challenge' }),
        startUpstreamMcp({ tls, fetch, registration: 'dcr', metadata: 'challenge' }),
      ]);
      return entries();
    },
  });
  let deps: BrokerDeps;
  const alice = () => ({ iss: stack.dev.idp.issuer, sub: 'alice' });
  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const upstream = (id: string) => deps.providers.get(id) as UpstreamClient;

  beforeAll(() => {
    deps = upstreamBroker(stack, entries());
  });
  afterAll(async () => {
    await Promise.all([sharedIdp?.close(), wrongAudience?.close()]);
  });

  const connect = async (provider: string) => (await connectUpstream(stack, deps, provider)).done;
  const connectionsOf = (provider: string) =>
    query('SELECT state FROM connections WHERE provider = $1 AND subject_sub = $2', [provider, 'alice']);
  const secretsOf = (provider: string) =>
    query('SELECT kind, ciphertext FROM secrets WHERE provider = $1 AND subject_sub = $2 ORDER BY kind', [
      provider,
      'alice',
    ]);

  it("refuses an upstream whose metadata names the broker's own identity provider, asking that provider nothing", async () => {
    sharedIdp.authorizationServers = [stack.dev.idp.issuer];
    const refusal = await upstream('shared-idp')
      .resolve()
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(refusal).toBeInstanceOf(UpstreamSetupError);
    expect((refusal as Error).message).toContain(
      `names ${stack.dev.idp.issuer} is the broker's own identity provider (OIDC_ISSUER)`,
    );
    // Nothing was registered there or pinned to it, and no user's token went anywhere.
    expect(await query('SELECT * FROM upstream_registrations WHERE upstream = $1', ['shared-idp'])).toEqual([]);
    expect(await query('SELECT * FROM authorization_server_pins WHERE provider = $1', ['shared-idp'])).toEqual([]);
    expect(sharedIdp.bearers).toEqual([]);
    // A connect link for it fails at the broker, before the browser is sent anywhere.
    const page = await connect('shared-idp').catch((err: unknown) => err);
    expect(page).not.toHaveProperty('text', expect.stringContaining('is connected'));
    expect(await connectionsOf('shared-idp')).toEqual([]);
  });

  it('refuses an access token for another audience at the callback: nothing stored, nothing sent upstream', async () => {
    wrongAudience.tokenAudience = stack.mcpResourceUrl;
    const page = await connect('wrong-aud');
    expect(page.text).not.toContain('is connected');
    expect(wrongAudience.tokenRequests.at(-1)).toMatchObject({ grantType: 'authorization_code' });
    expect(await connectionsOf('wrong-aud')).toEqual([]);
    expect(await secretsOf('wrong-aud')).toEqual([]);
    expect(wrongAudience.bearers).toEqual([]);
  });

  it('refuses one at refresh the same way: the stored token stays, the refused one is kept nowhere', async () => {
    wrongAudience.tokenAudience = undefined;
    expect((await connect('wrong-aud')).text).toContain('wrong-aud is connected');
    const first = await accessTokenFor({ ...deps, clock: systemClock }, alice(), 'wrong-aud');
    expect(first).toBeDefined();

    wrongAudience.tokenAudience = stack.mcpResourceUrl;
    const requestsBefore = wrongAudience.tokenRequests.length;
    const sealed = await secretsOf('wrong-aud');
    expect(sealed.map((row) => row['kind'])).toEqual(['access_token', 'refresh_token']);
    await query("UPDATE secrets SET expires_at = now() - interval '1 minute' WHERE provider = 'wrong-aud'");
    const refreshed = await accessTokenFor({ ...deps, clock: systemClock }, alice(), 'wrong-aud').then(
      (token) => ({ token }),
      (err: unknown) => ({ err }),
    );
    expect(wrongAudience.tokenRequests.slice(requestsBefore)).toEqual([
      expect.objectContaining({ grantType: 'refresh_token' }),
    ]);
    // No token came back, and the vault still holds what it held: the refused token replaced nothing.
    expect(refreshed).not.toHaveProperty('token', expect.any(String));
    expect(await secretsOf('wrong-aud')).toEqual(sealed);
    expect(wrongAudience.bearers).toEqual([]);
  });
});
