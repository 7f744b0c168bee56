import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NavigationState } from '../../src/flow/navigationStates.js';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { appendEntries } from '../../src/ledger/ledgerRepo.js';
import { launchChromium } from '../support/chromium.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The operator pages in Chromium: the real CSP (no script, no inline style:
// the charts are SVG styled from app.css), sign-in as `ops` from a deep link,
// a recovery form posted by the browser itself. Screenshots go to test-results/ops/.
const SHOTS = fileURLToPath(new URL('../../test-results/ops/', import.meta.url));
const MINUTE = 60_000;

describe('operator pages in Chromium', () => {
  const { stack } = useBrokerStack();
  let browser: Browser;
  const open = navigationFixture('USER_REVIEW', { subject: { iss: 'https://idp.test', sub: 'dave' } });

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    browser = await launchChromium(stack.tls.certPem);
    // Some history for the charts: flows in several states and lineages over the last days, with
    // completion → verified latencies from 1 s to 3 min.
    const states: NavigationState[] = [
      'MRTR_RETRY_ACCEPTED',
      'EXPIRED',
      'OUT_OF_BAND_PENDING',
      'DECLINED',
      'ORIGINAL_RESPONSE_ACCEPTED',
      'RETRY_RESPONSE_ACCEPTED',
    ];
    const lineages = ['mrtr', 'nested', 'error_retry'] as const;
    for (let i = 0; i < 24; i++) {
      const createdAt = new Date(Date.now() - (i % 9) * 86_400_000 - 10 * MINUTE);
      const flow = navigationFixture(states[i % states.length]!, {
        lineage: lineages[i % 3]!,
        createdAt,
        updatedAt: createdAt,
        expiresAt: new Date(createdAt.getTime() + 15 * MINUTE),
      });
      await insertNavigation(stack.db.pool, flow);
      const pending = new Date(createdAt.getTime() + MINUTE);
      await appendEntries(stack.db.pool, [
        {
          navigationId: flow.id,
          fromStatus: 'NAVIGATION_ACCEPTED',
          toStatus: 'OUT_OF_BAND_PENDING',
          event: 'browser_consent',
          actor: 'web:alice',
          evidence: {},
          at: pending,
        },
        {
          navigationId: flow.id,
          fromStatus: 'COMPLETION_NOTIFIED',
          toStatus: 'REQUIREMENT_VERIFIED',
          event: 'callback_verified',
          actor: 'web:alice',
          evidence: {},
          at: new Date(pending.getTime() + 1000 * [1, 4, 8, 25, 45, 180][i % 6]!),
        },
      ]);
    }
    await insertNavigation(stack.db.pool, open);
  });
  afterAll(async () => {
    await browser?.close();
  });

  function watch(page: Page): string[] {
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`${page.url()}: ${message.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`${page.url()}: ${err.message}`));
    return problems;
  }

  it('signs ops in from a deep link, draws the dashboard with no security-policy error, and closes a flow from its page', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const problems = watch(page);

    await page.goto(`${stack.brokerUrl}/ops`);
    await page.waitForURL((url) => url.origin === stack.dev.idp.issuer);
    await page.fill('input[name="login"]', 'ops');
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${stack.brokerUrl}/ops`);
    expect(await page.textContent('h1')).toBe('Operator dashboard');
    expect(await page.locator('svg.chart').count()).toBe(3);
    expect(await page.locator('tr.gate').count()).toBe(6);
    // app.css reached the SVG: the bars are coloured by class, not drawn in the default black.
    // (A string expression: this project's TypeScript has no DOM library.)
    const fill = await page.evaluate(`getComputedStyle(document.querySelector('svg.chart rect.bar-verified')).fill`);
    expect(fill).not.toBe('rgb(0, 0, 0)');
    await page.screenshot({ path: `${SHOTS}01-dashboard.png`, fullPage: true });

    await page.getByRole('link', { name: 'Flows', exact: true }).click();
    await page.selectOption('select[name="lineage"]', 'nested');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((url) => url.searchParams.get('lineage') === 'nested');
    expect(await page.locator('table.data tbody tr').count()).toBe(8);
    await page.screenshot({ path: `${SHOTS}02-flows-nested.png`, fullPage: true });

    await page.goto(`${stack.brokerUrl}/ops/flows/${open.id}`);
    await page.fill(`form[action="/ops/flows/${open.id}/close"] input[name="reason"]`, 'closed from Chromium');
    await page.getByRole('button', { name: 'Mark terminal' }).click();
    await page.waitForURL(`${stack.brokerUrl}/ops/flows/${open.id}?done=closed`);
    expect(await page.textContent('.notice')).toContain('marked terminal');
    await page.screenshot({ path: `${SHOTS}03-flow-closed.png`, fullPage: true });
    const { rows } = await stack.db.pool.query('SELECT status FROM elicitation_navigations WHERE id = $1', [open.id]);
    expect(rows).toEqual([{ status: 'EXPIRED' }]);

    expect(problems).toEqual([]);
    await context.close();
  });
});
