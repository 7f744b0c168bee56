import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { launchChromium } from '../support/chromium.js';
import { signInToBroker, watchPage } from '../support/chromiumPages.js';
import { elicitConnection, retryConnection } from '../support/connectFlow.js';
import { devGithubIssues, devGithubToken } from '../support/devGithubReader.js';
import { tokenFor } from '../support/mcpWire.js';

// The connect link of a github_create_issue elicitation walked in Chromium:
// the broker's sign-in and review, then the GitHub-like development provider's
// own sign-in and Authorize pages (its CSP lets their forms end at the broker's
// callback), back to the broker's done page; then the host's retry.
const SHOTS = fileURLToPath(new URL('../../test-results/github-connect/', import.meta.url));
// GitHub's OAuth App tokens: gho_ and 36 base62 characters.
const GITHUB_TOKEN = /gho_[A-Za-z0-9]{20,}/;

describe('the GitHub-like provider\u2019s connect link in Chromium', () => {
  let browser: Browser;
  let stack: BrokerStack;

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    stack = await startBrokerStack();
    browser = await launchChromium(stack.tls.certPem);
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('connects alice through the GitHub-like sign-in and Authorize pages with no token on any page, then the retry opens the issue once', async () => {
    const github = stack.dev.github!;
    const alice = await tokenFor(stack, 'alice');
    const args = { repository: 'alice/demo', title: 'Browser issue', body: 'Walked in Chromium.' };
    const elicited = await elicitConnection(stack, alice, 'github_create_issue', args);
    const context = await browser.newContext();
    const page = await context.newPage();
    const watched = watchPage(page);
    // What the user saw: every page's HTML and every address the tab showed.
    const seen: string[] = [];
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) seen.push(frame.url());
    });
    const look = async (shot: string) => {
      seen.push(await page.content());
      await page.screenshot({ path: `${SHOTS}${shot}`, fullPage: true });
    };

    await page.goto(elicited.url);
    await signInToBroker(stack, page, 'alice');
    expect(page.url()).toBe(elicited.url);
    expect(await page.textContent('h1')).toBe('Connect GitHub (development)?');
    expect(await page.textContent('.destination')).toBe(github.origin); // https://127.0.0.1:<port>, port included
    expect(await page.textContent('.purpose')).toBe('open the issue Browser issue in alice/demo');
    expect(await page.textContent('q.foreign')).toBe('Browser issue');
    const proceed = page.getByRole('button', { name: `Continue to ${github.origin}` });
    expect(await proceed.count()).toBe(1);
    await look('01-review.png');

    await proceed.click();
    await page.waitForURL(
      (url) => url.origin === github.origin && url.pathname.startsWith('/login/oauth/interaction/'),
    );
    expect(await page.textContent('header')).toContain('GitHub (development)');
    expect(await page.textContent('h1')).toBe('Sign in');
    expect(await page.textContent('main')).toContain('Sign in to continue to Connect Broker');
    await look('02-github-sign-in.png');
    await page.fill('input[name="login"]', 'alice');
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();

    await page.getByRole('heading', { name: 'Authorize Connect Broker' }).waitFor();
    expect(new URL(page.url()).origin).toBe(github.origin);
    expect(await page.textContent('header')).toContain('Signed in as alice');
    expect(await page.locator('dl.facts dt').allTextContents()).toEqual(['repo', 'read:user', 'Returns to']);
    expect(await page.textContent('.destination')).toBe(stack.brokerUrl);
    await look('03-github-authorize.png');
    await page.getByRole('button', { name: 'Authorize Connect Broker' }).click();

    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname === '/connect/done');
    expect(await page.textContent('h1')).toBe('GitHub (development) is connected');
    expect([...new URL(page.url()).searchParams.keys()]).toEqual(['n']);
    await look('04-done.png');
    const done = await page.content();
    expect(done).not.toMatch(/[\w-]{40,}/); // nothing shaped like a token, code or state on the done page
    expect(seen.join('\n')).toContain('Authorize Connect Broker'); // the pages themselves were looked at
    for (const text of seen) expect(text).not.toMatch(GITHUB_TOKEN);
    expect(watched.problems).toEqual([]);
    expect(watched.failures).toEqual([]);
    await context.close();

    const accepted = await retryConnection(stack, alice, 'github_create_issue', args, elicited.requestState, 'accept');
    expect(accepted.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', issue: { repository: 'alice/demo', title: args.title } },
    });
    const number = (accepted.json.result?.['structuredContent'] as { issue: { number: number } }).issue.number;
    const again = await retryConnection(stack, alice, 'github_create_issue', args, elicited.requestState, 'accept');
    expect((again.json.result?.['structuredContent'] as { issue: { number: number } }).issue.number).toBe(number);
    expect(JSON.stringify([accepted.json, again.json])).not.toMatch(GITHUB_TOKEN);

    const reader = await devGithubToken(github, stack.fetch, 'alice');
    expect(
      (await devGithubIssues(github, stack.fetch, reader, 'alice/demo')).filter((i) => i.title === args.title),
    ).toEqual([expect.objectContaining({ number })]);
    expect((await stack.db.pool.query('SELECT lineage, outcome_status FROM operation_receipts')).rows).toEqual([
      { lineage: 'mrtr', outcome_status: 'succeeded' },
    ]);
    expect((await stack.db.pool.query("SELECT upstream_name FROM connections WHERE provider = 'github'")).rows).toEqual(
      [{ upstream_name: 'alice' }],
    );
  });
});
