import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConnectionTool } from '../../src/mcp/defineConnectionTool.js';
import { completeResult } from '../../src/mcp/defineTool.js';
import { API_USER_AGENT } from '../../src/oauth/upstreamAccount.js';
import { google as googleCatalogEntry } from '../../src/providers/catalog/google.js';
import { findDefaultConnection } from '../../src/secrets/connectionsRepo.js';
import { findSecrets } from '../../src/secrets/secretsRepo.js';
import { openSecret } from '../../src/secrets/tokenVault.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { elicitConnection, openConnectLink, retryConnection, URL_CAPS } from '../support/connectFlow.js';
import { secretsBox } from '../support/deadToken.js';
import { startGoogleEmulator, type GoogleEmulator, type GoogleUser } from '../support/emulators/google.js';
import {
  connectAtProvider,
  connectThroughProvider,
  expectNoSecretIn,
  flowIdOf,
  hostMapOf,
  providerBrowser,
  type ConsentAnswer,
} from '../support/emulators/googleMicrosoftShared.js';
import { mapHosts } from '../support/hostMap.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { callTool, tokenFor, type WireResponse } from '../support/mcpWire.js';
import { disconnectConnection } from '../../src/broker/disconnectConnection.js';
import { disconnectDeps } from '../support/disconnectDeps.js';
import { createTestBrowser } from '../support/testBrowser.js';

// Google through the real broker stack, against an emulator of Google's
// documented wire behaviour on Google's real hosts (test/support/emulators/google.ts):
// the catalog entry as an operator writes it, a tool defined with
// defineConnectionTool, and the user's browser going to accounts.google.com.

const CALENDAR = 'https://www.googleapis.com/auth/calendar.readonly';
const GOOGLE_EMAIL = 'https://www.googleapis.com/auth/userinfo.email';
const CLIENT_ID = '294017725839-connectbroker.apps.googleusercontent.com';
const CLIENT_SECRET = 'GOCSPX-canary-client-secret-7Qm2';
const account = (login: string, sub: string): GoogleUser => ({
  email: `${login}.connect@gmail.com`,
  sub,
  name: `${login} at Google`,
  calendars: [
    { id: `${login}.connect@gmail.com`, summary: `${login}.connect@gmail.com`, primary: true },
    { id: `team-${login}@group.calendar.google.com`, summary: 'Team' },
  ],
});
const ACCOUNTS = {
  alice: account('alice', '104925847283749283746'),
  bob: account('bob', '113049582710394857201'),
  mallory: account('mallory', '109283746501928374650'),
  ops: account('ops', '100293847561029384756'),
};
const CAROL = account('carol', '118273645019283746501');
// Only ever the wrong account for someone else's connection.
const DAVE = account('dave', '107364518290374651829');

const googleCalendars = defineConnectionTool({
  name: 'google_calendars',
  title: 'List my Google calendars',
  description: 'Lists the calendars in your Google Calendar list.',
  provider: 'google',
  scopes: [CALENDAR],
  input: z.strictObject({}),
  annotations: { readOnlyHint: true, openWorldHint: true },
  purpose: () => 'list your Google calendars',
  async perform({ fetch }) {
    const response = await fetch('/calendar/v3/users/me/calendarList', { headers: { accept: 'application/json' } });
    if (!response.ok) throw new Error(`calendarList answered HTTP ${response.status}`);
    const { items } = z.object({ items: z.array(z.object({ summary: z.string() })) }).parse(await response.json());
    return { calendars: items.map((item) => item.summary) };
  },
  render: (outcome) =>
    completeResult(`Your calendars: ${(outcome['calendars'] as string[]).join(', ')}.`, {
      calendars: outcome['calendars'],
    }),
});

describe('Google (catalog google, oidc) through its emulator', () => {
  let stack: BrokerStack;
  let google: GoogleEmulator;
  const answers: string[] = [];

  beforeAll(async () => {
    stack = await startBrokerStack({
      retryWaitMs: 200,
      extraTools: [googleCalendars],
      extraProviders: async ({ brokerUrl, tls }) => {
        google = await startGoogleEmulator({
          tls,
          client: {
            clientId: CLIENT_ID,
            clientSecret: CLIENT_SECRET,
            redirectUris: [`${brokerUrl}/oauth/callback/google`],
          },
          users: [...Object.values(ACCOUNTS), CAROL, DAVE],
        });
        return [
          {
            id: 'google',
            catalog: 'google',
            clientId: CLIENT_ID,
            clientSecret: CLIENT_SECRET,
            scopes: ['openid', 'email', CALENDAR],
          },
        ];
      },
      brokerFetch: (fetch) => mapHosts(fetch, hostMapOf(google)),
    });
  });
  afterEach(async () => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
    expect(google.failures).toEqual([]);
    expectNoSecretIn(stack, google.secrets(), answers);
    await stack.db.pool.query('DELETE FROM secrets');
  });
  afterAll(async () => {
    await stack?.close();
    await google?.close();
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const kept = (response: WireResponse) => {
    answers.push(response.text);
    return response;
  };
  const calendarCalls = () =>
    google.seen.filter((s) => s.host === 'www.googleapis.com' && s.path === '/calendar/v3/users/me/calendarList');
  const tokenRequests = (grantType: string) =>
    google.seen.filter(
      (s) => s.host === 'oauth2.googleapis.com' && s.path === '/token' && s.form.get('grant_type') === grantType,
    );

  const connectAndRetry = (login: keyof typeof ACCOUNTS, answer: ConsentAnswer = {}, retry = true) =>
    connectThroughProvider(
      stack,
      google,
      { login, account: ACCOUNTS[login].email, tool: 'google_calendars', answer, retry },
      answers,
    );

  it("asks to connect, sends the user to accounts.google.com, and the retried call lists the calendars once with the user's token", async () => {
    const before = calendarCalls().length;
    const { elicited, trip, retried, flowId, statusAfterCallback } = await connectAndRetry('alice');
    expect(elicited.message).toContain('accounts.google.com');

    // The authorization request on Google's real host: PKCE, a nonce, offline access asked again every time.
    expect(`${trip.authorizeUrl.origin}${trip.authorizeUrl.pathname}`).toBe(
      'https://accounts.google.com/o/oauth2/v2/auth',
    );
    const sent = Object.fromEntries(trip.authorizeUrl.searchParams);
    expect(sent).toMatchObject({
      client_id: CLIENT_ID,
      response_type: 'code',
      scope: `openid email ${CALENDAR}`,
      access_type: 'offline',
      prompt: 'consent',
      code_challenge_method: 'S256',
      redirect_uri: `${stack.brokerUrl}/oauth/callback/google`,
    });
    expect(sent['nonce']).toMatch(/^[\w-]{20,}$/);
    expect(sent).not.toHaveProperty('resource');
    expect(trip.done.text).toContain('Google is connected');
    expect(statusAfterCallback).toBe('REQUIREMENT_VERIFIED');

    // Discovery at accounts.google.com; the code redeemed at oauth2.googleapis.com with HTTP Basic, the verifier, no secret in the body.
    expect(
      google.seen.some((s) => s.host === 'accounts.google.com' && s.path === '/.well-known/openid-configuration'),
    ).toBe(true);
    const exchange = tokenRequests('authorization_code').at(-1);
    expect(exchange!.headers.authorization).toMatch(/^Basic /);
    expect(exchange!.form.has('client_secret')).toBe(false);
    expect(exchange!.form.get('code_verifier')).toMatch(/^[\w-]{43,}$/);

    expect(retried!.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { calendars: ['alice.connect@gmail.com', 'Team'] },
    });
    const calls = calendarCalls().slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.headers.authorization).toBe(
      `Bearer ${google.grants.valuesOf(ACCOUNTS.alice.email, 'access_token').at(-1)}`,
    );
    expect(calls[0]!.headers['user-agent']).toBe(API_USER_AGENT);
    for (const [name, value] of Object.entries(googleCatalogEntry.apiHeaders ?? {}))
      expect(calls[0]!.headers[name.toLowerCase()]).toBe(value);
    expect(
      await query('SELECT lineage, outcome_status FROM operation_receipts WHERE navigation_id = $1', [flowId]),
    ).toEqual([{ lineage: 'mrtr', outcome_status: 'succeeded' }]);
    expect((await query('SELECT status FROM elicitation_navigations WHERE id = $1', [flowId]))[0]?.status).toBe(
      'MRTR_RETRY_ACCEPTED',
    );

    // The account is the ID token's: Google's sub, named by its email; what Google granted; no metadata.
    expect(
      await query(
        "SELECT upstream_subject, upstream_name, granted_scopes, metadata, api_base, navigation_id FROM connections WHERE subject_sub = 'alice' AND provider = 'google'",
      ),
    ).toEqual([
      {
        upstream_subject: ACCOUNTS.alice.sub,
        upstream_name: ACCOUNTS.alice.email,
        // Google names `email` by its URL in the token answer.
        granted_scopes: ['openid', GOOGLE_EMAIL, CALENDAR],
        metadata: {},
        api_base: null,
        navigation_id: flowId,
      },
    ]);
    expect(
      (await query("SELECT kind FROM secrets WHERE subject_sub = 'alice' AND provider = 'google' ORDER BY kind")).map(
        (s) => s.kind,
      ),
    ).toEqual(['access_token', 'refresh_token']);
  });

  it('forgets the connection when Google answers 401 to a revoked token, asks to connect again, and the second consent brings a refresh token again (prompt=consent)', async () => {
    const first = await connectAndRetry('bob');
    expect(first.retried!.json.result).toMatchObject({ resultType: 'complete' });
    google.revokeAccessTokens(ACCOUNTS.bob.email);
    const before = calendarCalls().length;

    const refused = kept(await callTool(stack, first.mcp, 'google_calendars', {}, {}, URL_CAPS));
    expect(calendarCalls()).toHaveLength(before + 1);
    expect(refused.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { method: 'elicitation/create', params: { mode: 'url' } } },
    });
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'bob' AND provider = 'google'")).toEqual([]);
    expect(
      await query(
        "SELECT actor, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_forgotten'",
        [first.flowId],
      ),
    ).toEqual([{ actor: 'provider:google', evidence: { provider: 'google', reason: 'upstream_401' } }]);

    // Connecting again: bob already consented to this client once, so only prompt=consent makes Google issue a refresh token.
    const url = (refused.json.result as { inputRequests: { connect: { params: { url: string } } } }).inputRequests
      .connect.params.url;
    const { browser, received } = providerBrowser(stack, google);
    const again = await connectAtProvider(stack, browser, url, { login: 'bob', account: ACCOUNTS.bob.email });
    answers.push(...received);
    expect(again.authorizeUrl.searchParams.get('prompt')).toBe('consent');
    expect(
      google.tokenAnswers.filter((a) => a.user === ACCOUNTS.bob.email).map((a) => [a.grantType, a.refreshToken]),
    ).toEqual([
      ['authorization_code', true],
      ['authorization_code', true],
    ]);
    expect(
      (await query("SELECT kind FROM secrets WHERE subject_sub = 'bob' AND provider = 'google' ORDER BY kind")).map(
        (s) => s.kind,
      ),
    ).toEqual(['access_token', 'refresh_token']);
    const retried = kept(await callTool(stack, first.mcp, 'google_calendars', {}, {}, URL_CAPS));
    expect(retried.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { calendars: ['bob.connect@gmail.com', 'Team'] },
    });
  });

  it("refreshes an expired token with the refresh token of the consent, and keeps it when Google's refresh answer brings none", async () => {
    google.grants.accessTokenLifetimeSeconds = 20; // inside the broker's 30 s refresh margin: every use refreshes
    try {
      const { mcp, retried } = await connectAndRetry('mallory');
      expect(retried!.json.result).toMatchObject({ resultType: 'complete' });
      const again = kept(await callTool(stack, mcp, 'google_calendars', {}, {}, URL_CAPS));
      expect(again.json.result).toMatchObject({ resultType: 'complete' });
    } finally {
      google.grants.accessTokenLifetimeSeconds = 3599;
    }
    const [consentRefreshToken] = google.grants.valuesOf(ACCOUNTS.mallory.email, 'refresh_token');
    expect(
      google.tokenAnswers.filter((a) => a.user === ACCOUNTS.mallory.email).map((a) => [a.grantType, a.refreshToken]),
    ).toEqual([
      ['authorization_code', true],
      ['refresh_token', false],
      ['refresh_token', false],
    ]);
    const refreshes = tokenRequests('refresh_token').slice(-2);
    expect(refreshes.map((r) => r.form.get('refresh_token'))).toEqual([consentRefreshToken, consentRefreshToken]);
    expect(refreshes.every((r) => /^Basic /.test(r.headers.authorization ?? ''))).toBe(true);
    // Each call went out with the token its refresh just got, never the expired one.
    const issued = google.grants.valuesOf(ACCOUNTS.mallory.email, 'access_token');
    expect(
      calendarCalls()
        .slice(-2)
        .map((c) => c.headers.authorization),
    ).toEqual([`Bearer ${issued[1]}`, `Bearer ${issued[2]}`]);
    const stored = (
      await findSecrets(
        stack.db.pool,
        (await findDefaultConnection(stack.db.pool, { iss: stack.dev.idp.issuer, sub: 'mallory' }, 'google'))!.id,
      )
    ).find((s) => s.kind === 'refresh_token');
    expect(openSecret(secretsBox(stack), stored!)).toBe(consentRefreshToken);
  });

  it("records only the scopes the user ticked on Google's granular consent", async () => {
    const { trip, flowId, statusAfterCallback } = await connectAndRetry('ops', { values: { grant_0: '' } }, false);
    expect(statusAfterCallback).toBe('REQUIREMENT_VERIFIED');
    expect(trip.done.text).toContain('Google is connected');
    expect(google.tokenAnswers.filter((a) => a.user === ACCOUNTS.ops.email).map((a) => a.scope)).toEqual([
      `openid ${GOOGLE_EMAIL}`,
    ]);
    expect(
      (await query("SELECT granted_scopes FROM connections WHERE subject_sub = 'ops' AND provider = 'google'"))[0]
        ?.granted_scopes,
    ).toEqual(['openid', GOOGLE_EMAIL]);
    expect(
      (
        await query("SELECT evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'callback_verified'", [
          flowId,
        ])
      )[0]?.evidence,
    ).toMatchObject({ upstreamSubject: ACCOUNTS.ops.sub, grantedScopes: ['openid', GOOGLE_EMAIL] });
  });

  it('asks for a second consent, for the union, when the connection lacks a scope the tool needs; names it on the way; keeps the connection; refuses another account', async () => {
    const before = calendarCalls().length;
    // ops connects but unticks the calendar on Google's granular consent: not done, and said why.
    const first = await connectThroughProvider(
      stack,
      google,
      {
        login: 'ops',
        account: ACCOUNTS.ops.email,
        tool: 'google_calendars',
        answer: { values: { grant_0: '' } },
      },
      answers,
    );
    expect(first.retried!.json.result).toMatchObject({
      isError: true,
      structuredContent: { status: 'scopes_missing', missing: [CALENDAR] },
    });
    expect(first.retried!.text).toContain(`not granted \\"${CALENDAR}\\"`);
    expect(calendarCalls()).toHaveLength(before);
    const connection = async () =>
      (
        await query(
          "SELECT id, upstream_subject, granted_scopes FROM connections WHERE subject_sub = 'ops' AND provider = 'google'",
        )
      )[0];
    const made = await connection();
    // Google names `email` by its URL: the catalog's impliedScopes make it the same scope.
    expect(made).toMatchObject({ upstream_subject: ACCOUNTS.ops.sub, granted_scopes: ['openid', GOOGLE_EMAIL] });

    // The next call asks for the scope it lacks, on the same account, and the page names it.
    const elicited = await elicitConnection(stack, first.mcp, 'google_calendars', {});
    answers.push(elicited.message);
    expect(elicited.message).toContain(`must also grant "${CALENDAR}"`);
    expect(elicited.message).toContain('stays the same account');
    const { browser } = providerBrowser(stack, google);
    const { review } = await openConnectLink(stack, elicited.url, 'ops', browser);
    expect(review.text).toContain(`<code>${CALENDAR}</code>`);
    expect(review.text).toContain(`(<strong>${ACCOUNTS.ops.email}</strong>)`);
    const flowId = await flowIdOf(stack, elicited.url);

    // Signed in at Google as another account: refused and recorded; the connection and its tokens stay.
    const tokensBefore = await query(
      "SELECT kind, ciphertext FROM secrets WHERE subject_sub = 'ops' AND provider = 'google' ORDER BY kind",
    );
    const atGoogle = await browser.submitForm(review, {}, { form: '/connect/' });
    const asked = new URL(atGoogle.url).searchParams;
    // The union: what the provider entry asks for, and nothing granted before asked twice under another name.
    expect(asked.get('scope')).toBe(`openid email ${CALENDAR}`);
    expect(asked.get('include_granted_scopes')).toBe('true');
    const wrong = await browser.submitForm(atGoogle, { login: DAVE.email }, { button: 'Allow' });
    answers.push(wrong.text);
    expect(wrong.status).toBe(403);
    expect(wrong.text).toContain(`as ${DAVE.email}, but your Google connection is ${ACCOUNTS.ops.email}`);
    expect(await connection()).toEqual(made);
    expect(
      await query(
        "SELECT kind, ciphertext FROM secrets WHERE subject_sub = 'ops' AND provider = 'google' ORDER BY kind",
      ),
    ).toEqual(tokensBefore);
    expect(
      await query("SELECT evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'account_mismatch'", [
        flowId,
      ]),
    ).toEqual([{ evidence: { connectionId: made!.id, connectedAs: ACCOUNTS.ops.sub, signedInAs: DAVE.sub } }]);
    expect((await query('SELECT status FROM elicitation_navigations WHERE id = $1', [flowId]))[0]?.status).toBe(
      'OUT_OF_BAND_PENDING',
    );

    // The same link again, as the same account: the union is granted, the connection kept, the call done once.
    const trip = await connectAtProvider(stack, browser, elicited.url, {
      login: 'ops',
      account: ACCOUNTS.ops.email,
    });
    expect(trip.done.text).toContain('Google is connected');
    expect(await connection()).toEqual({ ...made, granted_scopes: ['openid', GOOGLE_EMAIL, CALENDAR] });
    const retried = kept(
      await retryConnection(stack, first.mcp, 'google_calendars', {}, elicited.requestState, 'accept'),
    );
    expect(retried.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { calendars: ['ops.connect@gmail.com', 'Team'] },
    });
    expect(calendarCalls()).toHaveLength(before + 1);
  });

  it('refuses to connect when the user denies at Google (error=access_denied), redeeming and storing nothing', async () => {
    const exchanges = tokenRequests('authorization_code').length;
    const { trip, flowId, statusAfterCallback } = await connectAndRetry('alice', { decision: 'Deny' }, false);
    expect(trip.done.status).toBe(400);
    expect(trip.done.text).toContain('did not grant access (access_denied)');
    expect(tokenRequests('authorization_code')).toHaveLength(exchanges);
    expect(statusAfterCallback).toBe('OUT_OF_BAND_PENDING');
    expect(
      (
        await query("SELECT evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'provider_refused'", [
          flowId,
        ])
      )[0]?.evidence,
    ).toEqual({ error: 'access_denied' });
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'alice'")).toEqual([]);
  });

  it('disconnects: the refresh token revoked at oauth2.googleapis.com once, the tokens and the grant gone, the connection revoked; the next call asks to connect again', async () => {
    await connectAndRetry('bob');
    const [refreshToken] = google.grants.valuesOf(ACCOUNTS.bob.email, 'refresh_token').slice(-1);
    const [{ id }] = await query("SELECT id FROM connections WHERE subject_sub = 'bob' AND provider = 'google'");
    const before = google.revocations.length;
    const deps = disconnectDeps(stack, mapHosts(stack.fetch, hostMapOf(google)), [
      { id: 'google', catalog: 'google', clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, scopes: ['openid'] },
    ]);

    const result = await disconnectConnection(deps, { connectionId: id, actor: 'operator:ops', reason: 'offboarding' });

    expect(result).toEqual({ connectionId: id, provider: 'google', atProvider: 'revoked' });
    expect(google.revocations.slice(before)).toEqual([
      { kind: 'refresh_token', user: ACCOUNTS.bob.email, status: 200 },
    ]);
    const [request] = google.seen.filter((s) => s.host === 'oauth2.googleapis.com' && s.path === '/revoke').slice(-1);
    expect(request!.form.get('token')).toBe(refreshToken);
    // Google ended the grant: the refresh token is refused, and so is the last access token.
    expect(google.grants.live('refresh_token', refreshToken)).toBeUndefined();
    expect(
      google.grants.live('access_token', google.grants.valuesOf(ACCOUNTS.bob.email, 'access_token').at(-1)),
    ).toBeUndefined();
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'bob' AND provider = 'google'")).toEqual([]);
    expect(await query('SELECT state FROM connections WHERE id = $1', [id])).toEqual([{ state: 'revoked' }]);
    expectNoSecretIn(stack, google.secrets(), deps.logs);

    const asked = kept(await callTool(stack, await tokenFor(stack, 'bob'), 'google_calendars', {}, {}, URL_CAPS));
    expect(asked.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { params: { mode: 'url' } } },
    });
  });

  it("the emulator: ID tokens verify against Google's published keys, and a second consent without prompt=consent brings no refresh token", async () => {
    const fetch = mapHosts(stack.fetch, hostMapOf(google));
    const redirectUri = `${stack.brokerUrl}/oauth/callback/google`;
    const browser = createTestBrowser({ fetch, stopAt: (u) => u.href.startsWith(redirectUri) });
    const grant = async (extra: Record<string, string>) => {
      const authorize = new URL('https://accounts.google.com/o/oauth2/v2/auth');
      authorize.search = new URLSearchParams({
        client_id: CLIENT_ID,
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: 'openid email',
        access_type: 'offline',
        nonce: 'n-0S6_WzA2Mj',
        ...extra,
      }).toString();
      const page = await browser.get(authorize.href);
      const back = await browser.submitForm(page, { login: CAROL.email }, { button: 'Allow' });
      const response = await fetch('https://oauth2.googleapis.com/token', {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: new URL(back.location!).searchParams.get('code')!,
          redirect_uri: redirectUri,
        }).toString(),
      });
      return (await response.json()) as Record<string, string>;
    };
    const first = await grant({});
    const second = await grant({});
    const askedAgain = await grant({ prompt: 'consent' });
    expect([first, second, askedAgain].map((answer) => 'refresh_token' in answer)).toEqual([true, false, true]);

    const discovery = (await (await fetch('https://accounts.google.com/.well-known/openid-configuration')).json()) as {
      issuer: string;
      jwks_uri: string;
    };
    const keys = createLocalJWKSet((await (await fetch(discovery.jwks_uri)).json()) as JSONWebKeySet);
    const { payload, protectedHeader } = await jwtVerify(first['id_token']!, keys, {
      issuer: discovery.issuer,
      audience: CLIENT_ID,
      algorithms: ['RS256'],
    });
    expect(protectedHeader.alg).toBe('RS256');
    expect(payload).toMatchObject({
      iss: 'https://accounts.google.com',
      aud: CLIENT_ID,
      azp: CLIENT_ID,
      sub: CAROL.sub,
      email: CAROL.email,
      email_verified: true,
      nonce: 'n-0S6_WzA2Mj',
    });
  });
});
