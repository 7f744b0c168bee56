import { DEV_PASSWORD } from '../src/dev/devUsers.js';
import { GITHUB_FORMS, REPORTS_FORMS } from '../test/support/connectFlow.js';
import { devGithubIssues, devGithubToken, type DevGithub } from '../test/support/devGithubReader.js';
import type { BrowserResponse, TestBrowser } from '../test/support/testBrowser.js';
import { callTool } from './flowMcp.js';
import type { FlowStack } from './flowStack.js';

/** What a flow made at the provider: an id the provider gives it, and its title. */
export interface Made {
  id: string;
  title: string;
}

/**
 * A service the flow bench connects to and acts at: its provider entry, the
 * tool whose call needs the connection, its pages between the broker's review
 * and callback, and how to read back what the flows made there.
 */
export interface FlowService {
  /** The provider id: its callback is /oauth/callback/<id>. */
  provider: string;
  /** As the broker's pages name it. */
  name: string;
  tool: string;
  /** What its tool makes, in the plural: "reports", "issues". */
  madeNoun: string;
  /** The origin the review page says the user is sent to. */
  origin: string;
  args(login: string, title: string, index: number): Record<string, unknown>;
  /**
   * From the provider's first page (after Continue on the review page) to wherever its last form
   * sends the browser; `settled` stops early at a broker page saying a sibling flow connected first.
   */
  authorize(
    browser: TestBrowser,
    first: BrowserResponse,
    login: string,
    settled: (page: BrowserResponse) => boolean,
  ): Promise<BrowserResponse>;
  /** What a retry's structuredContent says was made. */
  madeBy(structured: unknown): Made | undefined;
  /** Where the receipt's outcome keeps the title (SQL, on operation_receipts r). */
  receiptTitleSql: string;
  /** Everything the user has at the provider that the bench could have made. */
  list(login: string, mcpToken: string): Promise<Made[]>;
}

/** reports_create at the development Report Service (oidc-provider): sign in, "Allow access?", Allow. */
export function reportService(stack: FlowStack): FlowService {
  return {
    provider: 'reports',
    name: 'Report Service',
    tool: 'reports_create',
    madeNoun: 'reports',
    origin: stack.dev.reports.issuer,
    args: (_login, title, index) => ({ title, body: `Flow bench report ${index}.` }),
    async authorize(browser, first, login, settled) {
      const consent = await browser.submitForm(expectPage(first, 'name="password"'), { login, password: DEV_PASSWORD });
      if (settled(consent)) return consent;
      return browser.submitForm(expectPage(consent, 'Allow access?'), {}, { form: REPORTS_FORMS.allow });
    },
    madeBy(structured) {
      const report = (structured as { status?: string; report?: { id?: string; title?: string } } | undefined)?.report;
      return report?.id && report.title !== undefined ? { id: report.id, title: report.title } : undefined;
    },
    receiptTitleSql: "r.outcome->'report'->>'title'",
    async list(_login, mcpToken) {
      // Through the broker's reports_list, as the user.
      const result = await callTool(stack, mcpToken, 'reports_list', {}, {}, {});
      const reports = (result['structuredContent'] as { reports?: { id: string; title: string }[] } | undefined)
        ?.reports;
      if (result['resultType'] !== 'complete' || !reports)
        throw new Error(`reports_list answered ${JSON.stringify(result).slice(0, 200)}`);
      return reports.map((r) => ({ id: r.id, title: r.title }));
    },
  };
}

/**
 * github_create_issue in `<login>/demo` at the GitHub-like development provider: sign in, then
 * "Authorize Connect Broker" the first time only (GitHub skips it for an app the user already
 * authorized for these scopes). Its issues are read at the emulator with the user's own token.
 */
export function githubService(stack: Pick<FlowStack, 'dev' | 'fetch'>): FlowService {
  const github: DevGithub = stack.dev.github!;
  const readers = new Map<string, Promise<string>>();
  const readerOf = (login: string) =>
    readers.get(login) ?? readers.set(login, devGithubToken(github, stack.fetch, login)).get(login)!;
  return {
    provider: 'github',
    name: 'GitHub (development)',
    tool: 'github_create_issue',
    madeNoun: 'issues',
    origin: github.origin,
    args: (login, title, index) => ({ repository: `${login}/demo`, title, body: `Flow bench issue ${index}.` }),
    async authorize(browser, first, login, settled) {
      const next = await browser.submitForm(expectPage(first, 'name="password"'), { login, password: DEV_PASSWORD });
      if (settled(next) || !next.url.startsWith(`${github.origin}/`)) return next;
      return browser.submitForm(expectPage(next, 'Authorize Connect Broker'), {}, { form: GITHUB_FORMS.allow });
    },
    madeBy(structured) {
      const issue = (
        structured as { status?: string; issue?: { number?: number; title?: string; repository?: string } } | undefined
      )?.issue;
      return issue?.number !== undefined && issue.title !== undefined
        ? { id: `${issue.repository}#${issue.number}`, title: issue.title }
        : undefined;
    },
    receiptTitleSql: "r.outcome->'issue'->>'title'",
    async list(login) {
      const repository = `${login}/demo`;
      return (await devGithubIssues(github, stack.fetch, await readerOf(login), repository)).map((i) => ({
        id: `${repository}#${i.number}`,
        title: i.title,
      }));
    },
  };
}

export function expectPage(page: BrowserResponse, needle: string): BrowserResponse {
  if (page.status !== 200 || !page.text.includes(needle))
    throw new Error(
      `expected "${needle}" at ${page.url}, got HTTP ${page.status}: ${page.text.replace(/\s+/g, ' ').slice(0, 200)}`,
    );
  return page;
}
