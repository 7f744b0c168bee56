import { expect } from 'vitest';
import { SESSION_COOKIE } from '../../src/auth/sessionCookie.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import type { BrokerStack } from './brokerStack.js';
import { createTestBrowser, type TestBrowser } from './testBrowser.js';

/** A new browser signed in to the stack's broker as `login`, through the development identity provider's form. */
export async function signedInBrowser(stack: BrokerStack, login: string): Promise<TestBrowser> {
  const browser = createTestBrowser({ fetch: stack.fetch });
  const form = await browser.get(`${stack.brokerUrl}/login?return_to=/`);
  const home = await browser.submitForm(form, { login, password: DEV_PASSWORD });
  expect(home.text).toContain(`Signed in as <strong>${login}</strong>`);
  return browser;
}

/** The broker session cookie the browser holds (what it presents on every request). */
export function sessionCookieOf(stack: BrokerStack, browser: TestBrowser): string {
  const cookie = browser.cookiesFor(`${stack.brokerUrl}/`).find((c) => c.name === SESSION_COOKIE);
  if (!cookie) throw new Error('the browser holds no broker session cookie');
  return cookie.value;
}
