import type { Browser, Page } from 'playwright-core';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { digestOf } from '../../src/shared/tokens.js';
import type { BrokerStack } from '../support/brokerStack.js';
import { signInToBroker } from '../support/chromiumPages.js';
import { elicitConnection, type Elicited } from '../support/connectFlow.js';
import { createTestBrowser, type TestBrowser } from '../support/testBrowser.js';
import type { GatesService } from './gatesService.js';
import type { Witness } from './gatesWitness.js';

// The steps the gates' scenarios share, against the running service: a flow of reports_create up
// to its connect link, the flow's row, a browser signed in to the broker, Chromium through the
// whole connect flow, and the reset between scenarios.

export interface Flow extends Elicited {
  id: string;
  args: { title: string; body: string };
}

export async function flowOfLink(service: GatesService, url: string): Promise<string> {
  const handle = new URL(url).pathname.split('/').pop()!;
  const { rows } = await service.db.query<{ id: string }>(
    'SELECT id FROM elicitation_navigations WHERE handle_digest = $1',
    [digestOf(handle)],
  );
  if (!rows[0]) throw new Error(`no flow for ${url}`);
  return rows[0].id;
}

/** alice's reports_create on 2026-07-28, answered with a connect link (she has no connection). */
export async function elicitFlow(service: GatesService, witness: Witness, token: string, title: string): Promise<Flow> {
  const args = { title, body: `${title}: body` };
  const elicited = await elicitConnection(service.stack, token, 'reports_create', args);
  witness.linkEmitted(elicited.url);
  return { ...elicited, args, id: await flowOfLink(service, elicited.url) };
}

export async function flowRow(service: GatesService, id: string) {
  const { rows } = await service.db.query<{ status: string; row_version: number }>(
    'SELECT status, row_version FROM elicitation_navigations WHERE id = $1',
    [id],
  );
  return rows[0]!;
}

export async function countFor(
  service: GatesService,
  table: 'consent_receipts' | 'operation_receipts' | 'secrets',
  id: string,
): Promise<number> {
  const { rows } = await service.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${table} WHERE navigation_id = $1`,
    [id],
  );
  return rows[0]!.n;
}

export async function eventsOf(service: GatesService, id: string) {
  const { rows } = await service.db.query<{ event: string; from_status: string; to_status: string; evidence: unknown }>(
    'SELECT event, from_status, to_status, evidence FROM navigation_events WHERE navigation_id = $1 ORDER BY flow_seq',
    [id],
  );
  return rows;
}

/**
 * Forgets alice's connection to the Report Service, so the next scenario's call asks her to
 * connect again (the suite's reset; the flows, receipts and ledger stay).
 */
export async function forgetConnections(service: GatesService): Promise<void> {
  await service.db.query('DELETE FROM secrets');
}

/** The reports the Report Service holds titled `title` (its own store, in the data folder). */
export async function reportsTitled(service: GatesService, title: string): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const store = JSON.parse(await readFile(`${service.dataDir}/report-service.json`, 'utf8')) as {
    reports: { title: string }[];
  };
  return store.reports.filter((r) => r.title === title).length;
}

/** A browser signed in to the broker as `login`, holding no link. */
export async function signedInBrowser(stack: BrokerStack, login: string): Promise<TestBrowser> {
  const browser = createTestBrowser({ fetch: stack.fetch });
  const home = await browser.submitForm(await browser.get(`${stack.brokerUrl}/login?return_to=/`), {
    login,
    password: DEV_PASSWORD,
  });
  if (home.url !== `${stack.brokerUrl}/`) throw new Error(`sign-in as ${login} ended at ${home.status} ${home.url}`);
  return browser;
}

/** Opens `url` in a fresh Chromium context and signs in to the broker as `login`; stops on the broker's page. */
export async function chromiumAt(
  chromium: Browser,
  witness: Witness,
  stack: BrokerStack,
  url: string,
  login: string,
): Promise<Page> {
  const context = await chromium.newContext();
  const page = await context.newPage();
  witness.watch(page);
  await page.goto(url);
  await signInToBroker(stack, page, login);
  return page;
}

/** From the broker's review page: consent, sign in at the Report Service, Allow; waits for the done page. */
export async function connectInChromium(page: Page, stack: BrokerStack, login: string): Promise<string> {
  await page.getByRole('button', { name: /^Continue to / }).click();
  await page.waitForURL((u) => u.origin !== stack.brokerUrl && u.pathname.startsWith('/interaction/'));
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', DEV_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((u) => u.origin === stack.brokerUrl && u.pathname === '/connect/done');
  return (await page.textContent('h1')) ?? '';
}
