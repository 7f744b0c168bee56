import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { launchChromium } from '../support/chromium.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The sign-in pages in a real browser: CSP (form-action applies to the
// redirects after a form POST), cookies across three origins, SameSite=Lax.
describe('sign-in in Chromium', () => {
  const { stack } = useBrokerStack();
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium(stack.tls.certPem);
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('signs alice in and out, with no page blocked by its security policy', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));

    await page.goto(`${stack.brokerUrl}/`);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.origin === stack.dev.idp.issuer);
    await page.fill('input[name="login"]', 'alice');
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${stack.brokerUrl}/`);
    expect(await page.textContent('h1')).toBe('Signed in as alice');

    const session = (await context.cookies(stack.brokerUrl)).find((c) => c.name === '__Host-broker_session');
    expect(session).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Lax', path: '/' });

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${stack.brokerUrl}/`);
    expect(await page.getByRole('link', { name: 'Sign in' }).count()).toBe(1);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('shows the error on a wrong password and stays on the sign-in form', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${stack.brokerUrl}/login`);
    await page.fill('input[name="login"]', 'alice');
    await page.fill('input[name="password"]', 'not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('do not match');
    expect(new URL(page.url()).origin).toBe(stack.dev.idp.issuer);
    // The pending sign-in is only the browser's sealed login cookie: no session, nothing in the database.
    const cookies = await context.cookies(stack.brokerUrl);
    expect(cookies.find((c) => c.name === '__Host-broker_session')).toBeUndefined();
    expect(cookies.find((c) => c.name === '__Host-broker_login')).toMatchObject({
      secure: true,
      httpOnly: true,
      sameSite: 'Lax',
      path: '/',
    });
    await context.close();
  });
});
