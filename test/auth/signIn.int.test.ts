import { afterAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { digestOf } from '../../src/shared/tokens.js';
import { createTestBrowser, type BrowserResponse, type TestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

describe('browser sign-in', () => {
  const { stack } = useBrokerStack();

  // Runs last: everything above signed people in and out.
  afterAll(() => {
    const all = stack.logs.join('');
    expect(all).not.toMatch(/eyJ[\w-]+\.eyJ/); // no ID or access token
    expect(all).not.toContain(stack.secrets.brokerIdpClientSecret);
    expect(all).not.toContain(DEV_PASSWORD);
  });

  const newBrowser = (): TestBrowser => createTestBrowser({ fetch: stack.fetch });
  const atCallback = (url: URL) => url.pathname === '/auth/callback';

  /** Runs the login up to the broker's callback, which is not followed. */
  async function signInUntilCallback(
    browser: TestBrowser,
    login = 'alice',
  ): Promise<{ form: BrowserResponse; callback: URL }> {
    const form = await browser.get(`${stack.brokerUrl}/login?return_to=/`);
    const done = await browser.submitForm(form, { login, password: DEV_PASSWORD }, { stopAt: atCallback });
    expect(done.location, 'the identity provider redirects back to the broker').toBeDefined();
    return { form, callback: new URL(done.location!) };
  }

  async function sessionRows() {
    const { rows } = await stack.db.pool.query(
      'SELECT id_digest, subject_iss, subject_sub, display_name, operator FROM web_sessions WHERE subject_sub IS NOT NULL',
    );
    return rows as { id_digest: Buffer; subject_iss: string; subject_sub: string; display_name: string }[];
  }

  it('signs alice in through the development identity provider over HTTPS', async () => {
    const browser = newBrowser();
    const form = await browser.get(`${stack.brokerUrl}/login?return_to=/`);
    expect(form.status).toBe(200);
    expect(new URL(form.url).origin).toBe(stack.dev.idp.issuer);
    expect(browser.forms(form)[0]?.fields.map((f) => f.name)).toEqual(['login', 'password']);

    // The broker's authorization request: code flow, PKCE S256, state, nonce, exact redirect URI.
    const authorize = new URL(form.redirects[1]!);
    expect(authorize.origin + authorize.pathname).toBe(`${stack.dev.idp.issuer}/auth`);
    expect(authorize.searchParams.get('response_type')).toBe('code');
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(authorize.searchParams.get('state')).toBeTruthy();
    expect(authorize.searchParams.get('nonce')).toBeTruthy();
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${stack.brokerUrl}/auth/callback`);

    const home = await browser.submitForm(form, { login: 'alice', password: DEV_PASSWORD });
    expect(home.url).toBe(`${stack.brokerUrl}/`);
    expect(home.status).toBe(200);
    expect(home.text).toContain('Signed in as <strong>alice</strong>');
    expect(home.text).not.toMatch(/eyJ[\w-]+\.eyJ/); // no token of any kind on the page

    const cookie = browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === '__Host-broker_session');
    expect(cookie).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Lax', path: '/', hostOnly: true });

    const rows = (await sessionRows()).filter((r) => r.id_digest.equals(digestOf(cookie!.value)));
    expect(rows).toEqual([
      expect.objectContaining({
        subject_iss: stack.dev.idp.issuer,
        subject_sub: 'alice',
        display_name: 'alice',
        operator: false,
      }),
    ]);
    expect(home.text).not.toContain('href="/ops"');
    expect(
      browser.cookiesFor(`${stack.brokerUrl}/`).some((c) => c.name === '__Host-broker_login'),
      'the spent sign-in is forgotten',
    ).toBe(false);
  });

  it('remembers the operator role of a sign-in whose claims carry it (the demo ops user)', async () => {
    const browser = newBrowser();
    const form = await browser.get(`${stack.brokerUrl}/login?return_to=/`);
    const home = await browser.submitForm(form, { login: 'ops', password: DEV_PASSWORD });
    expect(home.text).toContain('Signed in as <strong>ops</strong>');
    expect(home.text).toContain('href="/ops"');
    const cookie = browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === '__Host-broker_session');
    const rows = (await sessionRows()).filter((r) => r.id_digest.equals(digestOf(cookie!.value)));
    expect(rows).toEqual([expect.objectContaining({ subject_sub: 'ops', operator: true })]);
  });

  it('gives the browser a new session id at sign-in, so a planted one is worthless', async () => {
    const browser = newBrowser();
    await browser.get((await signInUntilCallback(browser)).callback.href);
    const before = browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === '__Host-broker_session')!.value;
    // Signing in again from a browser that holds a session (planted or its own) replaces that session.
    const again = await browser.get(`${stack.brokerUrl}/login?return_to=/`, { stopAt: atCallback });
    const done = again.location
      ? again
      : await browser.submitForm(again, { login: 'alice', password: DEV_PASSWORD }, { stopAt: atCallback });
    await browser.get(done.location!);
    const after = browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === '__Host-broker_session')!.value;
    expect(after).not.toBe(before);
    const old = await stack.db.pool.query('SELECT 1 FROM web_sessions WHERE id_digest = $1', [digestOf(before)]);
    expect(old.rowCount).toBe(0);
  });

  it('writes nothing to the database before the identity provider sends the browser back', async () => {
    const sessions = async () =>
      (await stack.db.pool.query('SELECT count(*)::int AS n FROM web_sessions')).rows[0].n as number;
    const before = await sessions();
    const browser = newBrowser();
    const form = await browser.get(`${stack.brokerUrl}/login?return_to=/notes/recognisable-target`);
    const done = await browser.submitForm(form, { login: 'alice', password: DEV_PASSWORD }, { stopAt: atCallback });
    expect(await sessions()).toBe(before);
    const login = browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === '__Host-broker_login');
    expect(login).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Lax', path: '/', hostOnly: true });
    // Sealed: `<expiry>.<key id>.<AES-GCM ciphertext>`, with neither the state nor the return target in it.
    const [expiry, , ciphertext] = login!.value.split('.');
    expect(Number(expiry) * 1000).toBeGreaterThan(Date.now());
    const opened = Buffer.from(ciphertext!, 'base64url').toString('latin1');
    for (const clear of [new URL(done.location!).searchParams.get('state')!, 'recognisable-target'])
      expect(opened + login!.value).not.toContain(clear);
    await browser.get(done.location!);
    expect(await sessions()).toBe(before + 1);
  });

  it('finishes sign-ins started in two tabs of one browser, each once', async () => {
    const browser = newBrowser();
    const first = await browser.get(`${stack.brokerUrl}/login?return_to=/first`);
    const second = await browser.get(`${stack.brokerUrl}/login?return_to=/second`);
    const done = await browser.submitForm(first, { login: 'alice', password: DEV_PASSWORD }, { stopAt: atCallback });
    const back = await browser.get(done.location!, { followRedirects: false });
    expect(back.status).toBe(303);
    expect(back.location).toBe(`${stack.brokerUrl}/first`);
    // The other tab's sign-in is still there (its form already holds an IdP session: it may skip the password).
    const other = await browser.submitForm(second, { login: 'alice', password: DEV_PASSWORD }, { stopAt: atCallback });
    const otherBack = await browser.get(other.location!, { followRedirects: false });
    expect(otherBack.location).toBe(`${stack.brokerUrl}/second`);
    expect((await browser.get(done.location!, { followRedirects: false })).status).toBe(400);
  });

  it('refuses a callback whose state was tampered with, and binds nothing', async () => {
    const browser = newBrowser();
    const { callback } = await signInUntilCallback(browser, 'bob');
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${callback.searchParams.get('state')}x`);
    const refused = await browser.get(tampered.href);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Start again');
    expect((await sessionRows()).some((r) => r.subject_sub === 'bob')).toBe(false);
  });

  it('refuses a replayed callback', async () => {
    const browser = newBrowser();
    const { callback } = await signInUntilCallback(browser);
    expect((await browser.get(callback.href)).status).toBe(200);
    const replay = await browser.get(callback.href);
    expect(replay.status).toBe(400);
  });

  it('refuses a callback carried to another browser', async () => {
    const { callback } = await signInUntilCallback(newBrowser(), 'mallory');
    const other = newBrowser();
    const refused = await other.get(callback.href);
    expect(refused.status).toBe(400);
    expect(other.cookiesFor(`${stack.brokerUrl}/`)).toEqual([]);
    expect((await sessionRows()).some((r) => r.subject_sub === 'mallory')).toBe(false);
  });

  it('an authorization code is worthless without its PKCE verifier', async () => {
    const { callback } = await signInUntilCallback(newBrowser());
    const response = await stack.fetch(`${stack.dev.idp.issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        // The real client credentials: only the verifier is missing, as for a thief of the code.
        authorization: `Basic ${Buffer.from(`${stack.dev.idp.brokerClientId}:${stack.secrets.brokerIdpClientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: `${stack.brokerUrl}/auth/callback`,
      }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(/^invalid_(grant|request)$/);
  });

  it('signs out only with the form token, and then forgets the session', async () => {
    const browser = newBrowser();
    const { callback } = await signInUntilCallback(browser);
    const home = await browser.get(callback.href);
    const cookie = browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === '__Host-broker_session')!.value;

    const forged = await browser.post(`${stack.brokerUrl}/logout`, { _csrf: 'forged' }, { origin: stack.brokerUrl });
    expect(forged.status).toBe(403);
    const crossSite = await browser.submitForm(
      home,
      {},
      { form: '/logout', headers: { origin: 'https://evil.example' } },
    );
    expect(crossSite.status).toBe(403);
    expect(
      (await stack.db.pool.query('SELECT 1 FROM web_sessions WHERE id_digest = $1', [digestOf(cookie)])).rowCount,
    ).toBe(1);

    const out = await browser.submitForm(home, {}, { form: '/logout' });
    expect(out.url).toBe(`${stack.brokerUrl}/`);
    expect(out.text).toContain('Sign in');
    expect(
      (await stack.db.pool.query('SELECT 1 FROM web_sessions WHERE id_digest = $1', [digestOf(cookie)])).rowCount,
    ).toBe(0);
    expect(browser.cookiesFor(`${stack.brokerUrl}/`).some((c) => c.name === '__Host-broker_session')).toBe(false);
  });

  it('refuses a return_to that leaves the site, and changes nothing', async () => {
    const browser = newBrowser();
    const refused = await browser.get(`${stack.brokerUrl}/login?return_to=//evil.example/`);
    expect(refused.status).toBe(400);
    expect(browser.cookies()).toEqual([]);
  });

  it('sends strict security headers on every page', async () => {
    const response = await stack.fetch(`${stack.brokerUrl}/`);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(response.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('cache-control')).toBe('no-store');
  });
});
