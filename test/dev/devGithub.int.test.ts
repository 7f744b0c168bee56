import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevGithubServer, type GithubOAuthApp } from '../../src/dev/devGithubServer.js';
import { openGithubStore } from '../../src/dev/devGithubStore.js';
import { loadOrCreateDevSecrets } from '../../src/dev/devSecrets.js';
import { startLocalDevStack } from '../../src/dev/devStack.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { createRender } from '../../src/web/render.js';
import { capturedLogger } from '../support/capturedLogger.js';
import { createPkce, type Pkce } from '../support/devOAuth.js';
import { type HttpsTestServer, listenHttps } from '../support/httpsTestServer.js';
import { type BrowserResponse, createTestBrowser, type TestBrowser } from '../support/testBrowser.js';

// Nothing listens on port 9 (discard): the test browser stops at redirects there.
const CALLBACK = 'https://127.0.0.1:9/oauth/callback/github';
const app: GithubOAuthApp = {
  clientId: 'Iv1.testapp',
  clientSecret: 'test-app-secret',
  name: 'Test App',
  callbackUrl: CALLBACK,
};
const render = createRender({ cache: false });
// What the server logs, kept rather than printed (the app-token deletions are read from it).
const { logger, logs: logged } = capturedLogger();

let dir: string;
let tls: TlsMaterial;
let fetch: Fetch;
let server: HttpsTestServer;
let origin: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dev-github-'));
  tls = await loadOrCreateLocalTls(dir);
  fetch = createFetch({ extraCaPems: [tls.caPem] });
  server = await listenHttps(tls);
  origin = server.origin;
  const store = await openGithubStore();
  server.setHandler(createDevGithubServer({ origin, apps: [app], store, render, logger }).handler);
});

afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

const atCallback = (url: URL) => url.origin === 'https://127.0.0.1:9';

function newBrowser(): TestBrowser {
  return createTestBrowser({ fetch, stopAt: atCallback });
}

function authorizeUrl(params: Record<string, string | undefined> = {}): string {
  const defaults: Record<string, string | undefined> = {
    client_id: app.clientId,
    redirect_uri: CALLBACK,
    scope: 'repo read:user',
    state: 'state-1',
  };
  const entries = Object.entries({ ...defaults, ...params }).filter((e): e is [string, string] => e[1] !== undefined);
  return `${origin}/login/oauth/authorize?${new URLSearchParams(entries).toString()}`;
}

interface Authorized {
  code: string;
  pkce: Pkce;
  callback: URL;
}

/** authorize → sign-in page → consent page (Authorize) → redirect to the callback with code and state. */
async function authorize(
  browser: TestBrowser,
  login: string,
  params: Record<string, string | undefined> = {},
): Promise<Authorized> {
  const pkce = createPkce();
  let page: BrowserResponse = await browser.get(
    authorizeUrl({ code_challenge: pkce.challenge, code_challenge_method: 'S256', ...params }),
  );
  if (page.location === undefined && page.text.includes('name="password"'))
    page = await browser.submitForm(page, { login, password: DEV_PASSWORD });
  if (page.location === undefined) page = await browser.submitForm(page, {}, { form: 'Authorize Test App' });
  const callback = new URL(page.location ?? page.url);
  return { code: callback.searchParams.get('code') ?? '', pkce, callback };
}

async function exchange(
  params: Record<string, string>,
  accept?: string,
): Promise<{ status: number; contentType: string; body: Record<string, string> }> {
  const response = await fetch(`${origin}/login/oauth/access_token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(accept ? { accept } : {}) },
    body: new URLSearchParams({
      client_id: app.clientId,
      client_secret: app.clientSecret,
      redirect_uri: CALLBACK,
      ...params,
    }).toString(),
  });
  const contentType = response.headers.get('content-type') ?? '';
  const text = await response.text();
  const body = contentType.includes('json')
    ? (JSON.parse(text) as Record<string, string>)
    : Object.fromEntries(new URLSearchParams(text));
  return { status: response.status, contentType, body };
}

async function tokenFor(login: string, scope = 'repo read:user'): Promise<string> {
  const done = await authorize(newBrowser(), login, { scope });
  const answer = await exchange({ code: done.code, code_verifier: done.pkce.verifier }, 'application/json');
  return answer.body['access_token'] ?? '';
}

function api(
  path: string,
  token: string | undefined,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  return fetch(`${origin}/api/v3${path}`, {
    method: init.method ?? 'GET',
    headers: {
      accept: 'application/vnd.github+json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
}

describe('the OAuth web application flow, as GitHub runs it', () => {
  it('signs in, asks for consent naming the scopes, and redirects with code and state; the JSON answer is an opaque token with no refresh token', async () => {
    const browser = newBrowser();
    const pkce = createPkce();
    const signIn = await browser.get(authorizeUrl({ code_challenge: pkce.challenge, code_challenge_method: 'S256' }));
    expect(signIn.status).toBe(200);
    expect(signIn.url).toMatch(new RegExp(`^${origin}/login/oauth/interaction/[0-9a-f]{40}$`));
    expect(signIn.text).toContain('GitHub (development)');
    expect(browser.forms(signIn)[0]?.fields.map((f) => f.name)).toEqual(['login', 'password']);
    const csp = signIn.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'none'");
    expect(csp).toMatch(/form-action 'self' https:\/\/127\.0\.0\.1:9/);

    const consent = await browser.submitForm(signIn, { login: 'alice', password: DEV_PASSWORD });
    expect(consent.status).toBe(200);
    expect(consent.text).toContain('Authorize Test App');
    expect(consent.text).toContain('Signed in as <strong>alice</strong>');
    expect(consent.text).toContain('read:user');
    expect(consent.text).toContain('https://127.0.0.1:9');

    const done = await browser.submitForm(consent, {}, { form: 'Authorize Test App' });
    const callback = new URL(done.location ?? '');
    expect(`${callback.origin}${callback.pathname}`).toBe(CALLBACK);
    expect(callback.searchParams.get('state')).toBe('state-1');
    expect(callback.searchParams.has('iss')).toBe(false);

    const answer = await exchange(
      { code: callback.searchParams.get('code') ?? '', code_verifier: pkce.verifier },
      'application/json',
    );
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^application\/json/);
    expect(Object.keys(answer.body).sort()).toEqual(['access_token', 'scope', 'token_type']);
    expect(answer.body['access_token']).toMatch(/^gho_[A-Za-z0-9]{36}$/);
    expect(answer.body).toMatchObject({ token_type: 'bearer', scope: 'repo,read:user' });
  });

  it('answers form-encoded when the client does not ask for JSON', async () => {
    const done = await authorize(newBrowser(), 'bob');
    const answer = await exchange({ code: done.code, code_verifier: done.pkce.verifier });
    expect(answer.contentType).toMatch(/^application\/x-www-form-urlencoded/);
    expect(answer.body['access_token']).toMatch(/^gho_/);
    expect(answer.body['token_type']).toBe('bearer');
    expect(answer.body['refresh_token']).toBeUndefined();
  });

  it('refuses a reused code inside HTTP 200 with bad_verification_code, in both answer formats', async () => {
    const done = await authorize(newBrowser(), 'alice');
    const first = await exchange({ code: done.code, code_verifier: done.pkce.verifier }, 'application/json');
    expect(first.body['access_token']).toMatch(/^gho_/);
    for (const accept of ['application/json', undefined]) {
      const again = await exchange({ code: done.code, code_verifier: done.pkce.verifier }, accept);
      expect(again.status).toBe(200);
      expect(again.body['error']).toBe('bad_verification_code');
      expect(again.body['error_description']).toBe('The code passed is incorrect or expired.');
      expect(again.body['access_token']).toBeUndefined();
    }
  });

  it('refuses a wrong code_verifier inside HTTP 200, and the code is spent by the attempt', async () => {
    const done = await authorize(newBrowser(), 'alice');
    const wrong = await exchange({ code: done.code, code_verifier: createPkce().verifier }, 'application/json');
    expect(wrong).toMatchObject({ status: 200, body: { error: 'bad_verification_code' } });
    const right = await exchange({ code: done.code, code_verifier: done.pkce.verifier }, 'application/json');
    expect(right.body['error']).toBe('bad_verification_code');
  });

  it('refuses a missing code_verifier when the request had a code_challenge', async () => {
    const done = await authorize(newBrowser(), 'alice');
    const answer = await exchange({ code: done.code }, 'application/json');
    expect(answer).toMatchObject({ status: 200, body: { error: 'bad_verification_code' } });
  });

  it('refuses a wrong client secret inside HTTP 200 with incorrect_client_credentials', async () => {
    const done = await authorize(newBrowser(), 'alice');
    const answer = await exchange(
      { code: done.code, code_verifier: done.pkce.verifier, client_secret: 'not-the-secret' },
      'application/json',
    );
    expect(answer).toMatchObject({ status: 200, body: { error: 'incorrect_client_credentials' } });
  });

  it('takes client credentials in HTTP Basic too, and a redirect_uri that differs from the authorization request is refused', async () => {
    const done = await authorize(newBrowser(), 'alice', { redirect_uri: `${CALLBACK}/sub` });
    expect(done.callback.pathname).toBe('/oauth/callback/github/sub');
    const basic = Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64');
    const mismatch = await fetch(`${origin}/login/oauth/access_token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic}`,
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        code: done.code,
        code_verifier: done.pkce.verifier,
        redirect_uri: CALLBACK,
      }).toString(),
    });
    expect(await mismatch.json()).toMatchObject({ error: 'redirect_uri_mismatch' });

    const again = await authorize(newBrowser(), 'alice');
    const ok = await fetch(`${origin}/login/oauth/access_token`, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({ code: again.code, code_verifier: again.pkce.verifier }),
    });
    expect(((await ok.json()) as Record<string, string>)['access_token']).toMatch(/^gho_/);
  });

  it('sends a redirect_uri outside the registered callback to the callback with redirect_uri_mismatch, not to the named URL', async () => {
    for (const redirect of [
      'https://evil.example/oauth/callback/github',
      'https://127.0.0.1:9/oauth/callback/githubx',
      'https://127.0.0.1:9/oauth/other',
    ]) {
      const page = await newBrowser().get(authorizeUrl({ redirect_uri: redirect }));
      const location = new URL(page.location ?? '');
      expect(`${location.origin}${location.pathname}`).toBe(CALLBACK);
      expect(location.searchParams.get('error')).toBe('redirect_uri_mismatch');
      expect(location.searchParams.get('state')).toBe('state-1');
    }
  });

  it('accepts any port for a loopback callback URL, as GitHub does', async () => {
    const browser = createTestBrowser({ fetch, stopAt: (url) => url.pathname.startsWith('/oauth/') });
    const done = await authorize(browser, 'alice', { redirect_uri: 'https://127.0.0.1:10/oauth/callback/github' });
    expect(done.callback.port).toBe('10');
    expect(done.code).toMatch(/^[0-9a-f]{40}$/);
  });

  it('refuses a code older than ten minutes (a clock the test moves, no waiting)', async () => {
    let clock = Date.now();
    const late = await listenHttps(tls);
    late.setHandler(
      createDevGithubServer({
        origin: late.origin,
        apps: [app],
        store: await openGithubStore(),
        render,
        logger,
        now: () => clock,
      }).handler,
    );
    try {
      const browser = newBrowser();
      const pkce = createPkce();
      const query = new URLSearchParams({
        client_id: app.clientId,
        state: 's',
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
      });
      const signIn = await browser.get(`${late.origin}/login/oauth/authorize?${query.toString()}`);
      const consent = await browser.submitForm(signIn, { login: 'alice', password: DEV_PASSWORD });
      const done = await browser.submitForm(consent, {}, { form: 'Authorize Test App' });
      clock += 10 * 60_000 + 1;
      const answer = await fetch(`${late.origin}/login/oauth/access_token`, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          client_id: app.clientId,
          client_secret: app.clientSecret,
          code: new URL(done.location ?? '').searchParams.get('code') ?? '',
          code_verifier: pkce.verifier,
        }).toString(),
      });
      expect(await answer.json()).toMatchObject({ error: 'bad_verification_code' });
    } finally {
      await late.close();
    }
  });

  it('answers an unknown client_id with a page and no redirect', async () => {
    const page = await newBrowser().get(authorizeUrl({ client_id: 'Iv1.nobody' }));
    expect(page.status).toBe(404);
    expect(page.location).toBeUndefined();
  });

  it('returns access_denied with the state when the user cancels on the consent page', async () => {
    const browser = newBrowser();
    const signIn = await browser.get(authorizeUrl({ state: 'state-deny' }));
    const consent = await browser.submitForm(signIn, { login: 'mallory', password: DEV_PASSWORD });
    const denied = await browser.submitForm(consent, {}, { form: 'Cancel' });
    const location = new URL(denied.location ?? '');
    expect(location.searchParams.get('error')).toBe('access_denied');
    expect(location.searchParams.get('state')).toBe('state-deny');
    expect(location.searchParams.has('code')).toBe(false);
  });

  it('skips the consent page for scopes the user already granted the app, and asks again for a new scope', async () => {
    const browser = newBrowser();
    // ops authorizes nothing else in this file, so its only grant is this one.
    await authorize(browser, 'ops', { scope: 'read:user' });
    const again = await browser.get(authorizeUrl({ scope: 'read:user', state: 'state-again' }));
    expect(new URL(again.location ?? '').searchParams.get('state')).toBe('state-again');
    const wider = await browser.get(authorizeUrl({ scope: 'read:user repo' }));
    expect(wider.location).toBeUndefined();
    expect(wider.text).toContain('Authorize Test App');
  });

  it('refuses the sign-in form from a browser without the interaction cookie, and from another origin', async () => {
    const page = await newBrowser().get(authorizeUrl());
    const stranger = newBrowser();
    const posted = await stranger.submitForm(page, { login: 'alice', password: DEV_PASSWORD });
    expect(posted.status).toBe(400);
    expect(posted.text).toContain('expired or was already used');
    expect(stranger.cookies().map((c) => c.name)).not.toContain('github_session');

    const browser = newBrowser();
    const own = await browser.get(authorizeUrl());
    const forged = await browser.submitForm(
      own,
      { login: 'alice', password: DEV_PASSWORD },
      { headers: { origin: 'https://evil.example' } },
    );
    expect(forged.status).toBe(400);
    expect(browser.cookies().map((c) => c.name)).not.toContain('github_session');
  });

  it('re-renders the sign-in form on a wrong password', async () => {
    const browser = newBrowser();
    const page = await browser.get(authorizeUrl());
    const retry = await browser.submitForm(page, { login: 'alice', password: 'wrong' });
    expect(retry.status).toBe(400);
    expect(retry.text).toContain('Incorrect username or password.');
  });

  it('has no discovery document and no ID token', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      expect((await fetch(`${origin}${path}`)).status).toBe(404);
    }
    const done = await authorize(newBrowser(), 'alice', { scope: 'openid repo' });
    const answer = await exchange({ code: done.code, code_verifier: done.pkce.verifier }, 'application/json');
    expect(answer.body['id_token']).toBeUndefined();
    expect(answer.body['scope']).toBe('repo');
  });
});

describe('the REST API', () => {
  let alice: string;
  let bob: string;
  let aliceReadOnly: string;

  beforeAll(async () => {
    [alice, bob, aliceReadOnly] = await Promise.all([
      tokenFor('alice'),
      tokenFor('bob'),
      tokenFor('alice', 'read:user'),
    ]);
  });

  it('GET /user answers the account behind the token, with its scopes in X-OAuth-Scopes, at /api/v3 and at the root', async () => {
    const response = await api('/user', alice);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-oauth-scopes')).toBe('repo, read:user');
    const user = (await response.json()) as Record<string, unknown>;
    expect(user).toMatchObject({ login: 'alice', type: 'User', name: 'Alice Example' });
    expect(typeof user['id']).toBe('number');
    const root = await fetch(`${origin}/user`, { headers: { authorization: `token ${bob}` } });
    const bobUser = (await root.json()) as Record<string, unknown>;
    expect(bobUser['login']).toBe('bob');
    expect(bobUser['id']).not.toBe(user['id']);
  });

  it('answers 401 Bad credentials for an unknown token and Requires authentication without one', async () => {
    const bad = await api('/user', 'gho_000000000000000000000000000000000000');
    expect(bad.status).toBe(401);
    expect(await bad.json()).toMatchObject({ message: 'Bad credentials' });
    const none = await api('/user/issues', undefined);
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ message: 'Requires authentication' });
    const forged = await api('/repos/alice/demo/issues', 'not-a-token', { method: 'POST', body: { title: 'x' } });
    expect(forged.status).toBe(401);
  });

  it('creates an issue and lists it for its author, its assignee and its repository', async () => {
    const created = await api('/repos/bob/demo/issues', alice, {
      method: 'POST',
      body: { title: 'Printer on fire', body: 'Third floor.', assignees: ['bob'] },
    });
    expect(created.status).toBe(201);
    const issue = (await created.json()) as Record<string, unknown>;
    expect(issue).toMatchObject({
      title: 'Printer on fire',
      body: 'Third floor.',
      state: 'open',
      user: { login: 'alice' },
      assignees: [{ login: 'bob' }],
    });
    expect(created.headers.get('location')).toBe(issue['url']);
    expect(issue['html_url']).toBe(`${origin}/bob/demo/issues/${String(issue['number'])}`);

    const ids = async (path: string, token: string) =>
      ((await (await api(path, token)).json()) as { id: number }[]).map((i) => i.id);
    expect(await ids('/user/issues?filter=created', alice)).toContain(issue['id']);
    expect(await ids('/user/issues', alice)).not.toContain(issue['id']);
    expect(await ids('/user/issues', bob)).toContain(issue['id']);
    expect(await ids('/issues?filter=all', bob)).toContain(issue['id']);
    expect(await ids('/repos/bob/demo/issues', aliceReadOnly)).toContain(issue['id']);
  });

  it('refuses a create without a write scope as GitHub does (404), and a missing title with 422', async () => {
    const noScope = await api('/repos/alice/demo/issues', aliceReadOnly, { method: 'POST', body: { title: 'Nope' } });
    expect(noScope.status).toBe(404);
    expect(noScope.headers.get('x-accepted-oauth-scopes')).toBe('repo, public_repo');
    const noRepo = await api('/repos/alice/elsewhere/issues', alice, { method: 'POST', body: { title: 'Nope' } });
    expect(noRepo.status).toBe(404);
    const noTitle = await api('/repos/alice/demo/issues', alice, { method: 'POST', body: { body: 'no title' } });
    expect(noTitle.status).toBe(422);
    expect(await noTitle.json()).toMatchObject({
      message: 'Validation Failed',
      errors: [{ field: 'title', code: 'missing_field' }],
    });
    const badJson = await api('/repos/alice/demo/issues', alice, {
      method: 'POST',
      body: undefined,
      headers: { 'content-type': 'application/json' },
    });
    expect(badJson.status).toBe(422);
    const garbled = await fetch(`${origin}/api/v3/repos/alice/demo/issues`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: '{',
    });
    expect(garbled.status).toBe(400);
    expect(await garbled.json()).toMatchObject({ message: 'Problems parsing JSON' });
  });

  it('paginates issue lists with a Link header', async () => {
    const mallory = await tokenFor('mallory');
    for (const n of [1, 2, 3])
      await api('/repos/mallory/demo/issues', mallory, { method: 'POST', body: { title: `Page ${n}` } });
    const first = await api('/repos/mallory/demo/issues?per_page=2', mallory);
    expect(((await first.json()) as unknown[]).length).toBe(2);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1] ?? '';
    expect(new URL(next).searchParams.get('page')).toBe('2');
    const second = await fetch(next, { headers: { authorization: `Bearer ${mallory}` } });
    expect(((await second.json()) as { title: string }[]).map((i) => i.title)).toEqual(['Page 1']);
    expect(second.headers.get('link')).toBeNull();
  });

  it('honours Idempotency-Key: the same request is answered with the first issue, a different one with 422', async () => {
    const key = `receipt-${Date.now()}`;
    const create = (title: string, token = alice) =>
      api('/repos/alice/demo/issues', token, { method: 'POST', body: { title }, headers: { 'idempotency-key': key } });
    const first = await create('Exactly once');
    const second = await create('Exactly once');
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const [a, b] = (await Promise.all([first.json(), second.json()])) as { id: number }[];
    expect(b?.id).toBe(a?.id);
    const listed = (await (await api('/repos/alice/demo/issues?per_page=100', alice)).json()) as { title: string }[];
    expect(listed.filter((i) => i.title === 'Exactly once')).toHaveLength(1);

    const changed = await create('Something else');
    expect(changed.status).toBe(422);
    // Keys belong to the user who sent them.
    const otherUser = await create('Exactly once', bob);
    expect(otherUser.status).toBe(201);
    expect(((await otherUser.json()) as { id: number }).id).not.toBe(a?.id);
  });
});

describe('Delete an app token (DELETE /applications/{client_id}/token)', () => {
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  const deleteToken = (body: unknown, authorization = basic(app.clientId, app.clientSecret), clientId = app.clientId) =>
    fetch(`${origin}/api/v3/applications/${clientId}/token`, {
      method: 'DELETE',
      headers: { authorization, 'content-type': 'application/json', accept: 'application/vnd.github+json' },
      body: JSON.stringify(body),
    });
  const deletions = () =>
    logged
      .filter((line) => line.includes('"delete an app token"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it('revokes the token for the app that issued it (204): the API refuses it afterwards; the call is logged without it', async () => {
    const token = await tokenFor('bob');
    expect((await api('/user', token)).status).toBe(200);
    const before = deletions().length;
    const response = await deleteToken({ access_token: token });
    expect(response.status).toBe(204);
    expect((await api('/user', token)).status).toBe(401);
    expect(deletions().slice(before)).toEqual([
      expect.objectContaining({ clientId: app.clientId, status: 204, login: 'bob' }),
    ]);
    expect(logged.join('')).not.toContain(token);
  });

  it('answers 404 for a wrong client secret, another app or a token it never issued, and 422 without the token; the token still works', async () => {
    const token = await tokenFor('alice');
    expect((await deleteToken({ access_token: token }, basic(app.clientId, 'wrong-secret'))).status).toBe(404);
    expect((await deleteToken({ access_token: token }, undefined, 'Iv1.other')).status).toBe(404);
    expect((await deleteToken({ access_token: 'gho_000000000000000000000000000000000000' })).status).toBe(404);
    expect((await deleteToken({})).status).toBe(422);
    expect((await api('/user', token)).status).toBe(200);
  });
});

describe('persistence and the development stack', () => {
  it('keeps tokens across a restart by hash only, never the token itself', async () => {
    const filePath = join(dir, 'dev-github.json');
    const store = await openGithubStore({ filePath });
    const token = await store.issueToken({ login: 'alice', clientId: app.clientId, scopes: ['repo'] });
    const reopened = await openGithubStore({ filePath });
    expect(reopened.findToken(token)).toEqual({ login: 'alice', clientId: app.clientId, scopes: ['repo'] });
    expect(reopened.findToken(`${token}x`)).toBeUndefined();
    expect(await readFile(filePath, 'utf8')).not.toContain(token);
  });

  it('starts the GitHub-like provider from the dev stack only when asked, with the broker registered at /oauth/callback/github', async () => {
    const secrets = await loadOrCreateDevSecrets(dir);
    const base = { tls, fetch, secrets, render, logger, brokerUrl: 'https://127.0.0.1:9' };
    const without = await startLocalDevStack(base);
    try {
      expect(without.github).toBeUndefined();
    } finally {
      await without.close(0);
    }
    const stack = await startLocalDevStack({ ...base, github: true });
    try {
      const github = stack.github;
      expect(github?.callbackUrl).toBe(CALLBACK);
      expect(github?.apiUrl).toBe(`${github?.origin}/api/v3`);
      expect(github?.origin).toBe(`https://${github?.host}`);
      const url = `${github?.origin}/login/oauth/authorize?${new URLSearchParams({ client_id: github?.brokerClientId ?? '', scope: 'repo', state: 's' }).toString()}`;
      const page = await newBrowser().get(url);
      expect(page.status).toBe(200);
      expect(page.text).toContain('Connect Broker');
      // The secret is derived from the development keys: the same on every start.
      const again = await startLocalDevStack({ ...base, github: true });
      expect(again.github?.clientSecret).toBe(github?.clientSecret);
      await again.close(0);
    } finally {
      await stack.close(0);
    }
  });
});
