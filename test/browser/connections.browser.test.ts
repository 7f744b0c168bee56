import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { launchChromium } from '../support/chromium.js';
import {
  consentAndAuthorize,
  elicitConnection,
  openConnectLink,
  retryConnection,
  URL_CAPS,
} from '../support/connectFlow.js';
import { killStoredToken } from '../support/deadToken.js';
import { callTool, tokenFor } from '../support/mcpWire.js';

// "Your connections" in Chromium: the real CSP (no script; form-action governs the redirects after each
// POST), the session cookie on the broker's origin, a reconnect through the Report Service and back, and a
// disconnect. Screenshots go to test-results/connections/ (not committed: .gitignore).
const SHOTS = fileURLToPath(new URL('../../test-results/connections/', import.meta.url));

/** Console errors (CSP violations among them), page errors, and every response of 400 or more. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`${page.url()}: ${message.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`${page.url()}: ${err.message}`));
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
  });
  page.on('requestfailed', (request) => problems.push(`${request.failure()?.errorText ?? 'failed'} ${request.url()}`));
  return problems;
}

describe('the connections page in Chromium', () => {
  let stack: BrokerStack;
  let browser: Browser;
  let alice: string;
  let waiting: { requestState: string };
  const args = { title: 'Filed after reconnecting', body: 'From Chromium.' };

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    stack = await startBrokerStack();
    browser = await launchChromium(stack.tls.certPem);
    // alice connected the Report Service, then it stopped accepting the stored token: her next call asks again.
    alice = await tokenFor(stack, 'alice');
    const setup = { title: 'Setup', body: 'connect once' };
    const elicited = await elicitConnection(stack, alice, 'reports_create', setup);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    await retryConnection(stack, alice, 'reports_create', setup, elicited.requestState, 'accept');
    await killStoredToken(stack, 'alice');
    const asked = await callTool(stack, alice, 'reports_create', args, {}, URL_CAPS);
    waiting = asked.json.result as { requestState: string };
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('shows a connection that needs reconnecting, reconnects it as the same account, then disconnects it', async () => {
    const { rows } = await stack.db.pool.query<{ id: string; state: string }>(
      "SELECT id, state FROM connections WHERE subject_sub = 'alice'",
    );
    expect(rows).toEqual([{ id: expect.any(String), state: 'needs_reauth' }]);
    const connectionId = rows[0]!.id;
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = watch(page);

    await page.goto(`${stack.brokerUrl}/connections`);
    expect(await page.textContent('h1')).toBe('Sign in to see your connections');
    await page.screenshot({ path: `${SHOTS}01-sign-in.png`, fullPage: true });
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.origin === stack.dev.idp.issuer);
    await page.fill('input[name="login"]', 'alice');
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${stack.brokerUrl}/connections`);

    expect(await page.textContent('h1')).toBe('Your connections');
    const card = page.locator(`#connection-${connectionId}`);
    expect(await card.getAttribute('class')).toBe('connection state-needs_reauth');
    expect(await card.locator('.needs-reconnect').textContent()).toContain('Needs reconnecting.');
    expect(await card.locator('.connection-state').textContent()).toBe('Needs reconnecting');
    expect(await card.locator('dd').first().textContent()).toBe('rs-user-alice');
    // Marked by more than words: its border is not the other cards' colour.
    // A string, as in ops.browser.test.ts: the tests compile without the DOM library.
    expect(
      await page.evaluate(`getComputedStyle(document.getElementById('connection-${connectionId}')).borderLeftWidth`),
    ).toBe('4px');
    await page.screenshot({ path: `${SHOTS}02-needs-reconnecting.png`, fullPage: true });

    await page.getByRole('button', { name: 'Reconnect Report Service' }).click();
    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname.startsWith('/connect/'));
    expect(await page.textContent('h1')).toBe('Reconnect Report Service?');
    expect(await page.textContent('p.reconnect')).toContain('You asked to reconnect your Report Service account');
    await page.screenshot({ path: `${SHOTS}03-reconnect-review.png`, fullPage: true });
    await page.getByRole('button', { name: `Continue to ${stack.dev.reports.issuer}` }).click();
    await page.waitForURL((url) => url.origin === stack.dev.reports.issuer);
    await page.fill('input[name="login"]', 'alice');
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname === '/connect/done');
    expect(await page.textContent('h1')).toBe('Report Service is connected again');
    await page.screenshot({ path: `${SHOTS}04-connected-again.png`, fullPage: true });

    await page.getByRole('link', { name: 'Back to your connections' }).click();
    await page.waitForURL(`${stack.brokerUrl}/connections`);
    expect(await card.getAttribute('class')).toBe('connection state-active');
    expect(await card.locator('.connection-state').textContent()).toBe('Connected');
    expect(await page.getByRole('button', { name: 'Reconnect Report Service' }).count()).toBe(0);
    await page.screenshot({ path: `${SHOTS}05-connected.png`, fullPage: true });
    const after = await stack.db.pool.query("SELECT id, state FROM connections WHERE subject_sub = 'alice'");
    expect(after.rows).toEqual([{ id: connectionId, state: 'active' }]);
    // The call that was waiting for alice is done once, through its own flow.
    const created = await retryConnection(stack, alice, 'reports_create', args, waiting.requestState, 'accept');
    expect(created.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });

    await page.getByRole('button', { name: 'Disconnect Report Service' }).click();
    await page.waitForURL(`${stack.brokerUrl}/connections/${connectionId}/disconnect`);
    expect(await page.textContent('h1')).toBe('Report Service is disconnected');
    expect(await page.textContent('p.at-provider')).toContain('and Report Service revoked it too');
    await page.screenshot({ path: `${SHOTS}06-disconnected.png`, fullPage: true });
    await page.getByRole('link', { name: 'Back to your connections' }).click();
    await page.waitForURL(`${stack.brokerUrl}/connections`);
    expect(await card.locator('.connection-state').textContent()).toBe('Disconnected');
    // The way back: connect it again, or add another account.
    expect(await page.getByRole('button').allTextContents()).toEqual([
      'Connect Report Service again',
      'Add another Report Service account',
    ]);
    await page.screenshot({ path: `${SHOTS}07-list-disconnected.png`, fullPage: true });

    const html = await page.content();
    expect(html).not.toMatch(/eyJ[\w-]+\.eyJ/);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('adds another account through the page and makes it the default', async () => {
    const bob = await tokenFor(stack, 'bob');
    const setup = { title: 'Bob setup', body: 'connect once' };
    const elicited = await elicitConnection(stack, bob, 'reports_create', setup);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'bob'), 'bob');
    await retryConnection(stack, bob, 'reports_create', setup, elicited.requestState, 'accept');
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = watch(page);

    await page.goto(`${stack.brokerUrl}/login?return_to=/connections`);
    await page.fill('input[name="login"]', 'bob');
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${stack.brokerUrl}/connections`);
    await page.getByRole('button', { name: 'Add another Report Service account' }).click();
    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname.startsWith('/connect/'));
    expect(await page.textContent('h1')).toBe('Add another Report Service account?');
    await page.screenshot({ path: `${SHOTS}08-add-account-review.png`, fullPage: true });
    await page.getByRole('button', { name: `Continue to ${stack.dev.reports.issuer}` }).click();
    await page.waitForURL((url) => url.origin === stack.dev.reports.issuer);
    // This context never signed in at the Report Service: it signs in there as the account to add.
    await page.fill('input[name="login"]', 'mallory');
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname === '/connect/done');
    expect(await page.textContent('h1')).toBe('Another Report Service account is connected');
    await page.screenshot({ path: `${SHOTS}09-account-added.png`, fullPage: true });

    await page.getByRole('link', { name: 'Back to your connections' }).click();
    await page.waitForURL(`${stack.brokerUrl}/connections`);
    const { rows } = await stack.db.pool.query<{ id: string; upstream_subject: string; preferred: boolean }>(
      "SELECT id, upstream_subject, preferred FROM connections WHERE subject_sub = 'bob' ORDER BY connected_at",
    );
    expect(rows.map((r) => [r.upstream_subject, r.preferred])).toEqual([
      ['rs-user-bob', true],
      ['rs-user-mallory', false],
    ]);
    const [first, second] = rows;
    expect(await page.locator(`#connection-${first!.id} .default-flag`).count()).toBe(1);
    expect(await page.locator(`#connection-${second!.id} dd`).first().textContent()).toBe('rs-user-mallory');
    await page.screenshot({ path: `${SHOTS}10-two-accounts.png`, fullPage: true });

    await page.locator(`#connection-${second!.id}`).getByRole('button', { name: 'Make default' }).click();
    await page.waitForURL((url) => url.pathname === '/connections');
    expect(await page.locator(`#connection-${second!.id} .default-flag`).count()).toBe(1);
    expect(await page.locator(`#connection-${first!.id} .default-flag`).count()).toBe(0);
    await page.screenshot({ path: `${SHOTS}11-new-default.png`, fullPage: true });

    expect(await page.content()).not.toMatch(/eyJ[\w-]+\.eyJ/);
    expect(problems).toEqual([]);
    await context.close();
  });
});
