import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import type { BrokerStack } from './brokerStack.js';
import { callTool } from './mcpWire.js';
import { createTestBrowser, type BrowserResponse, type TestBrowser } from './testBrowser.js';

export const URL_CAPS = { elicitation: { url: {} } };

export interface Elicited {
  requestState: string;
  url: string;
  message: string;
}

/** Calls a connection-needing tool and returns its URL elicitation. */
export async function elicitConnection(
  stack: BrokerStack,
  token: string,
  tool: string,
  args: object,
): Promise<Elicited> {
  const response = await callTool(stack, token, tool, args, {}, URL_CAPS);
  const result = response.json.result as
    | {
        resultType: string;
        requestState: string;
        inputRequests: { connect: { params: { mode: string; url: string; message: string } } };
      }
    | undefined;
  if (result?.resultType !== 'input_required') throw new Error(`expected input_required, got ${response.text}`);
  return {
    requestState: result.requestState,
    url: result.inputRequests.connect.params.url,
    message: result.inputRequests.connect.params.message,
  };
}

/** Retries the tool with the host's answer for the connect elicitation. */
export function retryConnection(
  stack: BrokerStack,
  token: string,
  tool: string,
  args: object,
  requestState: string,
  action: 'accept' | 'decline' | 'cancel' | undefined,
  baseUrl?: string,
) {
  const extra = { requestState, ...(action ? { inputResponses: { connect: { action } } } : {}) };
  return callTool(stack, token, tool, args, extra, URL_CAPS, baseUrl ? { baseUrl } : {});
}

export interface BrowserRun {
  browser: TestBrowser;
  /** The broker's review page (after signing in to the broker). */
  review: BrowserResponse;
}

/** Opens the connect link as `login`, signing in to the broker on the way; stops on the review page. */
export async function openConnectLink(
  stack: Pick<BrokerStack, 'brokerUrl' | 'fetch'>,
  url: string,
  login: string,
  browser: TestBrowser = createTestBrowser({ fetch: stack.fetch }),
): Promise<BrowserRun> {
  const first = await browser.get(url);
  if (!first.text.includes('Sign in to connect')) return { browser, review: first };
  const signInForm = await browser.get(
    new URL(/href="(\/login\?[^"]+)"/.exec(first.text)![1]!.replace(/&amp;/g, '&'), stack.brokerUrl).href,
  );
  const review = await browser.submitForm(signInForm, { login, password: DEV_PASSWORD });
  return { browser, review };
}

/** The provider's consent forms, by the end of their action: the Report Service's (oidc-provider) by default. */
export const REPORTS_FORMS = { allow: '/confirm', deny: '/abort' };
/** The GitHub-like development provider's "Authorize" page. */
export const GITHUB_FORMS = { allow: '/authorize', deny: '/deny' };

/**
 * The rest of the flow in the browser: consent on our page, sign in at the
 * provider (the Report Service unless `forms` says otherwise), Allow there;
 * returns the final page (our done page, or wherever a refusal stopped it).
 */
export async function consentAndAuthorize(
  stack: Pick<BrokerStack, 'brokerUrl' | 'fetch'>,
  run: BrowserRun,
  login: string,
  decision: 'Allow' | 'Deny' = 'Allow',
  forms = REPORTS_FORMS,
): Promise<BrowserResponse> {
  const providerLogin = await run.browser.submitForm(run.review, {}, { form: '/connect/' });
  const consentPage = providerLogin.text.includes('name="password"')
    ? await run.browser.submitForm(providerLogin, { login, password: DEV_PASSWORD })
    : providerLogin;
  return run.browser.submitForm(consentPage, {}, { form: decision === 'Allow' ? forms.allow : forms.deny });
}
