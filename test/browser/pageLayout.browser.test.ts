import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { launchChromium } from '../support/chromium.js';
import { elicitConnection } from '../support/connectFlow.js';
import { tokenFor } from '../support/mcpWire.js';
import { layoutProblems } from '../support/pageLayout.js';

// Every page a user or an operator sees, in Chromium, at a desktop and a phone width: the broker's
// (home, an error, the sign-in prompt, the review, done, the connections page, the operator
// dashboard) and the development servers' (sign-in, the GitHub-like Authorize page, an upstream's
// authorization server asking "Allow access?"). No two boxes may overlap, no text may be wider than
// its box, no page wider than the window. Screenshots go to test-results/layout/ (not committed).
const SHOTS = fileURLToPath(new URL('../../test-results/layout/', import.meta.url));
const WIDTHS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 375, height: 740 },
] as const;

describe('every page at a desktop and a phone width', () => {
  let stack: BrokerStack;
  let browser: Browser;
  const problems: string[] = [];
  const looked: string[] = [];

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    stack = await startBrokerStack({ devUpstream: true });
    browser = await launchChromium(stack.tls.certPem);
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  /** The page as it is now, at each width: a screenshot, and every layout problem, named. */
  async function look(page: Page, label: string): Promise<void> {
    looked.push(label);
    for (const size of WIDTHS) {
      await page.setViewportSize({ width: size.width, height: size.height });
      await page.screenshot({ path: `${SHOTS}${label}-${size.name}.png`, fullPage: true });
      for (const p of await layoutProblems(page)) problems.push(`${label} at ${size.width} px: ${p.kind}: ${p.where}`);
    }
    await page.setViewportSize({ width: WIDTHS[0].width, height: WIDTHS[0].height });
  }

  async function signInAt(page: Page, login: string): Promise<void> {
    await page.fill('input[name="login"]', login);
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('lays out every page with no overlapping boxes, no text wider than its box, at both widths', async () => {
    const alice = await tokenFor(stack, 'alice');
    const context = await browser.newContext();
    const page = await context.newPage();

    await page.goto(`${stack.brokerUrl}/`);
    await look(page, '01-home');
    await page.goto(`${stack.brokerUrl}/connect/not-a-link`);
    expect(await page.textContent('h1')).toBe('This request cannot be used');
    expect(await page.textContent('main')).toContain('This is not a connect link');
    await look(page, '02-not-a-link');

    // The GitHub-like provider's connect link, walked.
    const github = stack.dev.github!;
    const issue = { repository: 'alice/demo', title: 'Laid out', body: 'At two widths.' };
    const elicited = await elicitConnection(stack, alice, 'github_create_issue', issue);
    await page.goto(elicited.url);
    await look(page, '03-sign-in-prompt');
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.origin === stack.dev.idp.issuer);
    expect(await page.textContent('main')).toContain('alice, bob, mallory and ops (operator)');
    await look(page, '04-identity-provider-sign-in');
    await signInAt(page, 'alice');
    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname.startsWith('/connect/'));
    expect(await page.textContent('dl.facts time')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    await look(page, '05-review');
    await page.getByRole('button', { name: `Continue to ${github.origin}` }).click();
    await page.waitForURL((url) => url.origin === github.origin);
    await look(page, '06-github-sign-in');
    await signInAt(page, 'alice');
    await page.getByRole('heading', { name: 'Authorize Connect Broker' }).waitFor();
    await look(page, '07-github-authorize');
    await page.getByRole('button', { name: 'Authorize Connect Broker' }).click();
    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname === '/connect/done');
    await look(page, '08-done');

    // The development upstream's authorization server: the broker registered itself there, so it asks.
    const memo = await elicitConnection(stack, alice, 'memo_list', {});
    await page.goto(memo.url);
    await look(page, '09-review-upstream');
    const memoIssuer = new URL(stack.dev.upstream!.issuer).origin;
    await page.getByRole('button', { name: `Continue to ${memoIssuer}` }).click();
    await page.waitForURL((url) => url.origin === memoIssuer);
    await signInAt(page, 'alice');
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    await look(page, '10-upstream-allow-access');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname === '/connect/done');

    await page.goto(`${stack.brokerUrl}/connections`);
    await look(page, '11-connections');
    await context.close();

    const operator = await browser.newContext();
    const ops = await operator.newPage();
    await ops.goto(`${stack.brokerUrl}/ops`);
    await ops.waitForURL((url) => url.origin === stack.dev.idp.issuer);
    await signInAt(ops, 'ops');
    await ops.waitForURL(`${stack.brokerUrl}/ops`);
    await look(ops, '12-ops-dashboard');
    await operator.close();

    expect(looked).toHaveLength(12);
    expect(problems).toEqual([]);
  }, 120_000);
});
