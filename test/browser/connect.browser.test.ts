import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { launchChromium } from '../support/chromium.js';
import { elicitConnection, retryConnection } from '../support/connectFlow.js';
import { callTool, tokenFor } from '../support/mcpWire.js';

// The connect link of a real reports_create elicitation, walked in Chromium:
// real CSP (form-action also governs the redirects after each POST), cookies
// on three origins, SameSite=Lax on the way back from the Report Service.
const SHOTS = fileURLToPath(new URL('../../test-results/connect/', import.meta.url));

interface Watched {
  /** Console errors and uncaught page errors (CSP violations are console errors). */
  problems: string[];
  /** Every response of 400 or more and every failed request, main documents included. */
  failures: string[];
}

function watch(page: Page): Watched {
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
async function signInToBroker(stack: BrokerStack, page: Page, login: string, shot?: string): Promise<void> {
  expect(await page.textContent('h1')).toBe('Sign in to connect a service');
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.origin === stack.dev.idp.issuer);
  if (shot) await page.screenshot({ path: `${SHOTS}${shot}`, fullPage: true });
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', DEV_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname.startsWith('/connect/'));
}

describe('the connect link in Chromium', () => {
  let browser: Browser;
  let stack: BrokerStack;

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
  });
  // A stack per test, so alice is not yet connected in either; each stack has its own
  // TLS key, which Chromium pins, so the browser is launched per stack too.
  beforeEach(async () => {
    stack = await startBrokerStack();
    browser = await launchChromium(stack.tls.certPem);
  });
  afterEach(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('connects alice page by page with no security-policy error, then the retry creates the report once', async () => {
    const alice = await tokenFor(stack, 'alice');
    const args = { title: 'Browser TPS', body: 'Walked in Chromium.' };
    const elicited = await elicitConnection(stack, alice, 'reports_create', args);
    const context = await browser.newContext();
    const page = await context.newPage();
    const watched = watch(page);

    await page.goto(elicited.url);
    await signInToBroker(stack, page, 'alice', '01-sign-in.png');

    expect(page.url()).toBe(elicited.url);
    expect(await page.textContent('h1')).toBe('Connect Report Service?');
    expect(await page.textContent('.destination')).toBe(stack.dev.reports.issuer); // https://127.0.0.1:<port>, port included
    const proceed = page.getByRole('button', { name: `Continue to ${stack.dev.reports.issuer}` });
    expect(await proceed.count()).toBe(1);
    expect(await page.textContent('.purpose')).toBe('create the report Browser TPS');
    expect(await page.textContent('q.foreign')).toBe('Browser TPS');
    await page.screenshot({ path: `${SHOTS}02-review.png`, fullPage: true });

    await proceed.click();
    await page.waitForURL((url) => url.origin === stack.dev.reports.issuer && url.pathname.startsWith('/interaction/'));
    expect(await page.textContent('h1')).toBe('Sign in');
    await page.screenshot({ path: `${SHOTS}03-reports-login.png`, fullPage: true });
    await page.fill('input[name="login"]', 'alice');
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();

    await page.waitForURL((url) => url.origin === stack.dev.reports.issuer && url.pathname.startsWith('/interaction/'));
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    await page.screenshot({ path: `${SHOTS}04-reports-consent.png`, fullPage: true });
    await page.getByRole('button', { name: 'Allow' }).click();

    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname === '/connect/done');
    expect(await page.textContent('h1')).toBe('Report Service is connected');
    await page.screenshot({ path: `${SHOTS}05-done.png`, fullPage: true });
    const done = new URL(page.url());
    expect([...done.searchParams.keys()]).toEqual(['n']);
    const html = await page.content();
    expect(html).not.toMatch(/eyJ[\w-]+\.eyJ/); // the Report Service's access tokens are JWTs
    expect(html).not.toMatch(/[\w-]{40,}/); // nor anything shaped like an opaque token, code or state
    expect(watched.problems).toEqual([]);
    expect(watched.failures).toEqual([]);
    await context.close();

    const accepted = await retryConnection(stack, alice, 'reports_create', args, elicited.requestState, 'accept');
    expect(accepted.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: 'Browser TPS' } },
    });
    const listed = await callTool(stack, alice, 'reports_list', {}, {}, {});
    const reports = (listed.json.result?.['structuredContent'] as { reports: { title: string }[] }).reports;
    expect(reports.filter((r) => r.title === 'Browser TPS')).toHaveLength(1);
    const receipts = await stack.db.pool.query('SELECT outcome_status FROM operation_receipts');
    expect(receipts.rows).toEqual([{ outcome_status: 'succeeded' }]);
  });

  it('sets a model-chosen title apart on the review page: quoted, isolated, without bidi or invisible characters', async () => {
    const alice = await tokenFor(stack, 'alice');
    // Hebrew is fine and stays; the right-to-left override and the zero-width joiner are not.
    const title = 'Q3 \u05d3\u05d5\u05d7\u202e gnivorppa\u202c\u200d done';
    const elicited = await elicitConnection(stack, alice, 'reports_create', { title, body: 'x' });
    const context = await browser.newContext();
    const page = await context.newPage();
    const watched = watch(page);
    await page.goto(elicited.url);
    await signInToBroker(stack, page, 'alice');

    const quoted = page.locator('.purpose q.foreign');
    expect(await quoted.textContent()).toBe('Q3 \u05d3\u05d5\u05d7 gnivorppa done');
    // A string, as in ops.browser.test.ts: the tests compile without the DOM library.
    const style = await page.evaluate(`(() => {
      const q = document.querySelector('.purpose q.foreign');
      const computed = getComputedStyle(q);
      return { unicodeBidi: computed.unicodeBidi, borderStyle: computed.borderTopStyle, quotes: computed.quotes, before: getComputedStyle(q, '::before').content };
    })()`);
    expect(style).toEqual({
      unicodeBidi: 'isolate',
      borderStyle: 'dashed',
      quotes: '"\u201c" "\u201d"',
      before: 'open-quote',
    });
    expect(await page.locator('.purpose').evaluate((el) => el.childNodes[0]?.textContent)).toBe('create the report ');
    expect(await page.textContent('main')).toContain('Quoted text was chosen by the app, not by the broker');
    expect(/[\u200b-\u200f\u202a-\u202e\u2066-\u2069]/u.test((await page.textContent('main')) ?? '')).toBe(false);
    await page.screenshot({ path: `${SHOTS}06-review-quoted-title.png`, fullPage: true });
    expect(watched).toEqual({ problems: [], failures: [] });
    await context.close();
  });
  it("shows mallory the refusal page (403) for alice's link and connects nothing", async () => {
    const alice = await tokenFor(stack, 'alice');
    const elicited = await elicitConnection(stack, alice, 'reports_create', { title: 'Not for mallory', body: '' });
    const context = await browser.newContext();
    const page = await context.newPage();
    const watched = watch(page);
    const refusals: number[] = [];
    page.on('response', (response) => {
      if (response.url() === elicited.url && response.request().isNavigationRequest()) refusals.push(response.status());
    });

    await page.goto(elicited.url);
    await signInToBroker(stack, page, 'mallory');

    expect(refusals).toEqual([200, 403]); // the sign-in prompt, then the refusal once signed in
    expect(await page.textContent('h1')).toBe('This link belongs to someone else');
    expect(await page.textContent('header')).toContain('Signed in as mallory');
    expect(await page.getByRole('button').count()).toBe(0);
    // Chromium reports a 4xx document as a console error; that one line, and nothing else (no CSP report).
    expect(watched.problems).toEqual([
      `${elicited.url}: Failed to load resource: the server responded with a status of 403 (Forbidden)`,
    ]);
    expect(watched.failures).toEqual([`403 ${elicited.url}`]);
    await context.close();

    const navigation = await stack.db.pool.query('SELECT id, status, subject_sub FROM elicitation_navigations');
    expect(navigation.rows).toEqual([expect.objectContaining({ status: 'USER_REVIEW', subject_sub: 'alice' })]);
    const events = await stack.db.pool.query(
      'SELECT event, actor FROM navigation_events WHERE navigation_id = $1 ORDER BY id',
      [navigation.rows[0].id],
    );
    expect(events.rows).toContainEqual({ event: 'subject_mismatch', actor: 'browser:mallory' });
    for (const table of ['secrets', 'consent_receipts', 'oauth_transactions', 'operation_receipts']) {
      expect((await stack.db.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows, table).toEqual([{ n: 0 }]);
    }
  });
});
