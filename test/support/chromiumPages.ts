import type { Page } from 'playwright-core';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import type { BrokerStack } from './brokerStack.js';

// What the Chromium tests of a connect link share: what went wrong on a page,
// and the broker's sign-in through the development identity provider.

export interface Watched {
  /** Console errors and uncaught page errors (CSP violations are console errors). */
  problems: string[];
  /** Every response of 400 or more and every failed request, main documents included. */
  failures: string[];
}

export function watchPage(page: Page): Watched {
  const watched: Watched = { problems: [], failures: [] };
  page.on('console', (message) => {
    if (message.type() === 'error') watched.problems.push(`${page.url()}: ${message.text()}`);
  });
  page.on('pageerror', (err) => watched.problems.push(`${page.url()}: ${err.message}`));
  page.on('response', (response) => {
    if (response.status() >= 400) watched.failures.push(`${response.status()} ${response.url()}`);
  });
  page.on('requestfailed', (request) =>
    watched.failures.push(`${request.failure()?.errorText ?? 'failed'} ${request.url()}`),
  );
  return watched;
}

/** From the "Sign in to connect" page through the development identity provider, back to the link. */
export async function signInToBroker(stack: BrokerStack, page: Page, login: string): Promise<void> {
  const heading = await page.textContent('h1');
  if (heading !== 'Sign in to connect a service')
    throw new Error(`expected the broker's sign-in prompt at ${page.url()}, found "${heading}"`);
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.origin === stack.dev.idp.issuer);
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', DEV_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname.startsWith('/connect/'));
}
