import { UnauthorizedError, type FetchLike } from '@modelcontextprotocol/client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { launchChromium } from '../support/chromium.js';
import { InMemoryHostOAuth, listenLoopbackCallback } from '../support/mcpHostOAuth.js';
import { sdkClient, type SdkTarget } from '../support/sdkClient.js';
import { CHROMIUM_HOST_RULES } from './rehearsalHosts.js';

// The rehearsal's browser: Debian's Chromium, the rehearsal's names mapped to this machine, and
// only the rehearsal's server key trusted (by SPKI pin; every name shares one certificate).

export function launchRehearsalChromium(certPem: string): Promise<Browser> {
  return launchChromium(certPem, [CHROMIUM_HOST_RULES]);
}

/** Signs in at the identity provider's form if it shows one (a browser with a session there skips it). */
async function signInAtIdp(page: Page, login: string, password: string): Promise<void> {
  if ((await page.locator('input[name="password"]').count()) === 0) return;
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** The broker's /login through the identity provider; returns the home page's heading. */
export async function signInToBroker(page: Page, publicUrl: string, login: string, password: string): Promise<string> {
  await page.goto(`${publicUrl}/login?return_to=/`);
  await signInAtIdp(page, login, password);
  await page.waitForURL((url) => url.origin === publicUrl && url.pathname === '/');
  return (await page.textContent('h1')) ?? '';
}

/**
 * An MCP host's token for the broker, as a desktop host gets one: the official SDK client starts
 * with none, follows the 401 to the protected resource metadata and the identity provider, opens
 * the authorization URL (code + PKCE, RFC 8707 resource) in the user's browser, takes the code at
 * its loopback redirect and redeems it. `clientId`: the host's client, pre-registered at the IdP.
 */
export async function hostToken(options: {
  context: BrowserContext;
  target: SdkTarget;
  fetch: FetchLike;
  clientId: string;
  login: string;
  password: string;
}): Promise<string> {
  const callback = await listenLoopbackCallback();
  const page = await options.context.newPage();
  try {
    const host = new InMemoryHostOAuth({
      redirectUrl: callback.redirectUrl,
      clientName: 'MCP host',
      openAuthorization: async (url) => {
        await page.goto(url.href);
      },
    });
    host.registered = { client_id: options.clientId };
    const first = sdkClient(options.target, host, { era: '2026-07-28', fetch: options.fetch });
    const refused = await first.client.connect(first.transport).then(
      () => undefined,
      (err: unknown) => err,
    );
    await first.client.close();
    if (!(refused instanceof UnauthorizedError))
      throw new Error(`the host expected to be sent to the identity provider, got ${String(refused)}`);
    await signInAtIdp(page, options.login, options.password);
    const params = await callback.received;
    await first.transport.finishAuth(params);
    const token = host.saved?.access_token;
    if (!token) throw new Error('the host got no access token');
    return token;
  } finally {
    await page.close();
    await callback.close();
  }
}

/**
 * A connect link walked by a signed-in user: the broker's review page, Continue, the provider's
 * sign-in (the emulators' demo users) and its consent button, back to the broker's done page.
 * Returns the review and done pages' headings.
 */
export async function connectInBrowser(
  page: Page,
  link: string,
  login: string,
  consentButton: string,
): Promise<{ review: string; done: string }> {
  const brokerOrigin = new URL(link).origin;
  await page.goto(link);
  const review = (await page.textContent('h1')) ?? '';
  await page.getByRole('button', { name: /^Continue to / }).click();
  await page.waitForURL((url) => url.origin !== brokerOrigin);
  if ((await page.locator('input[name="password"]').count()) > 0) {
    await page.fill('input[name="login"]', login);
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }
  await page.getByRole('button', { name: consentButton }).click();
  await page.waitForURL((url) => url.origin === brokerOrigin && url.pathname === '/connect/done');
  return { review, done: (await page.textContent('h1')) ?? '' };
}
