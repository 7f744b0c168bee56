import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { openReportStore } from '../../src/dev/reportStore.js';
import { atTestCallback, codeRequestUrl } from '../support/devOAuth.js';
import { type DevServersFixture, startDevServers } from '../support/devServers.js';
import { createTestBrowser, type TestBrowser } from '../support/testBrowser.js';

let dev: DevServersFixture;

beforeAll(async () => {
  dev = await startDevServers(await openReportStore());
});

afterAll(async () => {
  await dev?.close();
});

function newBrowser(): TestBrowser {
  return createTestBrowser({ fetch: dev.fetch, stopAt: atTestCallback });
}

describe('sign-in page', () => {
  it('shows a form whose fields are named login and password', async () => {
    const page = await newBrowser().get(codeRequestUrl(dev.idp));
    expect(page.status).toBe(200);
    expect(page.url.startsWith(`${dev.idp.issuer}/interaction/`)).toBe(true);
    const [form] = newBrowser().forms(page);
    expect(form?.method).toBe('POST');
    expect(form?.fields.map((f) => [f.name, f.type])).toEqual([
      ['login', 'text'],
      ['password', 'password'],
    ]);
    expect(page.text).toContain('Development identity provider');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'none'");
  });

  it('re-renders the form with an error on a wrong password and issues no code', async () => {
    const browser = newBrowser();
    const page = await browser.get(codeRequestUrl(dev.idp));
    const retry = await browser.submitForm(page, { login: 'alice', password: 'wrong' });
    expect(retry.status).toBe(400);
    expect(retry.location).toBeUndefined();
    expect(retry.redirects).toEqual([]);
    expect(retry.text).toContain('That user name and password do not match');
    expect(browser.forms(retry)[0]?.fields.find((f) => f.name === 'login')?.value).toBe('alice');

    const done = await browser.submitForm(retry, { password: DEV_PASSWORD });
    expect(new URL(done.location ?? '').searchParams.get('code')).toBeTruthy();
  });

  it('refuses a form posted without the interaction cookie, and signs nobody in', async () => {
    const page = await newBrowser().get(codeRequestUrl(dev.idp));
    const stranger = newBrowser();
    const posted = await stranger.submitForm(page, { login: 'alice', password: DEV_PASSWORD });
    expect(posted.status).toBe(400);
    expect(posted.location).toBeUndefined();
    expect(posted.text).toContain('expired or was already used');
    expect(stranger.cookies().map((c) => c.name)).not.toContain('idp_session');
  });

  it('refuses a form posted from another origin', async () => {
    const browser = newBrowser();
    const page = await browser.get(codeRequestUrl(dev.idp));
    const posted = await browser.submitForm(
      page,
      { login: 'alice', password: DEV_PASSWORD },
      { headers: { origin: 'https://evil.example' } },
    );
    expect(posted.status).toBe(400);
    expect(posted.location).toBeUndefined();
  });
});

describe('consent page (Report Service)', () => {
  it('names the client, the resource and the scopes, and Deny returns access_denied', async () => {
    const browser = newBrowser();
    const url = codeRequestUrl(dev.reports, {
      scope: 'reports:read reports:write',
      resource: dev.reports.apiResource,
      state: 'state-2',
    });
    const login = await browser.get(url);
    const consent = await browser.submitForm(login, { login: 'alice', password: DEV_PASSWORD });
    expect(consent.status).toBe(200);
    expect(consent.text).toContain('reports test client');
    expect(consent.text).toContain('reports:read reports:write');
    expect(consent.text).toContain(dev.reports.apiResource);
    expect(consent.text).toContain('Signed in as <strong>alice</strong>');

    const denied = await browser.submitForm(consent, {}, { form: 'Deny' });
    const callback = new URL(denied.location ?? '');
    expect(callback.href.startsWith(dev.reports.client.redirectUri)).toBe(true);
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe('state-2');
    expect(callback.searchParams.get('code')).toBeNull();
  });

  it('returns a code to the redirect URI when the user presses Allow', async () => {
    const browser = newBrowser();
    const login = await browser.get(codeRequestUrl(dev.reports, { scope: 'reports:read' }));
    const consent = await browser.submitForm(login, { login: 'bob', password: DEV_PASSWORD });
    const allowed = await browser.submitForm(consent, {}, { form: 'Allow' });
    const callback = new URL(allowed.location ?? '');
    expect(callback.searchParams.get('code')).toBeTruthy();
    expect(callback.searchParams.get('iss')).toBe(dev.reports.issuer);
  });
});
