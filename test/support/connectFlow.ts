import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import type { BrokerStack } from './brokerStack.js';
import { callTool, type WireResponse } from './mcpWire.js';
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
  const consentPage = await providerConsentPage(run, login);
  return run.browser.submitForm(consentPage, {}, { form: decision === 'Allow' ? forms.allow : forms.deny });
}

/**
 * As consentAndAuthorize with Allow at the Report Service (or another provider with its forms), but
 * the browser stops at the provider's redirect back to the broker: returns the callback's URL, for
 * the test to send when it is ready.
 */
export async function authorizeUpToCallback(run: BrowserRun, login: string, provider = 'reports'): Promise<string> {
  const consentPage = await providerConsentPage(run, login);
  const held = await run.browser.submitForm(
    consentPage,
    {},
    { form: REPORTS_FORMS.allow, stopAt: (url) => url.pathname === `/oauth/callback/${provider}` },
  );
  if (!held.location) throw new Error(`expected a redirect to the callback, got ${held.status} at ${held.url}`);
  return held.location;
}

export interface HeldFlow {
  elicited: Elicited;
  run: BrowserRun;
  /** The provider's redirect back to the broker, not yet followed. */
  callbackUrl: string;
  /** The host's MRTR retry (accept), waiting for the flow on the instance it was sent to. */
  retry: Promise<WireResponse>;
  /** What the retry answered so far: its status, its error, or undefined while it waits. */
  answered(): unknown;
}

/**
 * A connect flow of `login` for reports_create, authorized at the provider but held before its
 * callback, with the host's retry sent to `baseUrl` and given time to start waiting.
 */
export async function holdFlowWithWaitingRetry(
  stack: BrokerStack,
  token: string,
  login: string,
  args: object,
  baseUrl: string,
): Promise<HeldFlow> {
  const elicited = await elicitConnection(stack, token, 'reports_create', args);
  const run = await openConnectLink(stack, elicited.url, login);
  const callbackUrl = await authorizeUpToCallback(run, login);
  const retry = retryConnection(stack, token, 'reports_create', args, elicited.requestState, 'accept', baseUrl);
  let answered: unknown;
  void retry.then(
    (response) => (answered ??= response.status),
    (err: unknown) => (answered ??= err),
  );
  await new Promise((r) => setTimeout(r, 500));
  return { elicited, run, callbackUrl, retry, answered: () => answered };
}

// Consent on our page, then sign in at the provider unless the browser already is.
async function providerConsentPage(run: BrowserRun, login: string): Promise<BrowserResponse> {
  const providerLogin = await run.browser.submitForm(run.review, {}, { form: '/connect/' });
  return providerLogin.text.includes('name="password"')
    ? run.browser.submitForm(providerLogin, { login, password: DEV_PASSWORD })
    : providerLogin;
}
