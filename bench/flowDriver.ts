import { DEV_PASSWORD } from '../src/dev/devUsers.js';
import type { Fetch } from '../src/shared/httpClient.js';
import { createTestBrowser, type BrowserResponse, type TestBrowser } from '../test/support/testBrowser.js';
import type { UserGates } from './flowGate.js';
import { callTool } from './flowMcp.js';
import { expectPage, type FlowService } from './flowServices.js';

export interface FlowContext {
  brokerUrl: string;
  /** Where the flows connect, and the tool they call. */
  service: FlowService;
  fetch: Fetch;
  /** An MCP access token per user, from the development identity provider. */
  tokens: ReadonlyMap<string, string>;
  gates: UserGates;
  /** Deletes the user's stored connection to the service's provider (its `secrets` rows). */
  forget(login: string): Promise<void>;
}

export interface FlowResult {
  index: number;
  login: string;
  title: string;
  /** The step that failed, and why; undefined when the flow ended in a created report or issue. */
  failure: { step: string; message: string } | undefined;
  /** GET /oauth/callback/<provider> until its 303 (the code exchange, the token checks and the verifying transaction). */
  callbackMs: number | undefined;
  /** The MCP retry's round trip: accept → created. */
  retryMs: number | undefined;
  totalMs: number;
  /** Time spent waiting for the user's turn (bench/flowGate.ts), included in totalMs. */
  gateWaitMs: number;
  /** What the retry said it made (the service's id for it). */
  madeId: string | undefined;
}

const URL_ELICITATION = { elicitation: { url: {} } };

/**
 * One complete connect flow, as an MCP host and a person with a browser would
 * drive it: the service's tool → input_required with a connect link; the link
 * in a fresh cookie jar (sign in to the broker at the identity provider,
 * review, continue, the provider's own pages, callback, done page); then the
 * retry with the requestState and `accept`, which must create the report or issue.
 */
export async function runFlow(ctx: FlowContext, index: number, login: string, title: string): Promise<FlowResult> {
  const started = performance.now();
  const { service } = ctx;
  const result: FlowResult = {
    index,
    login,
    title,
    failure: undefined,
    callbackMs: undefined,
    retryMs: undefined,
    totalMs: 0,
    gateWaitMs: 0,
    madeId: undefined,
  };
  let step = 'elicit';
  try {
    const args = service.args(login, title, index);
    // The connection must stay from the link until the retry: once one of the user's flows is
    // verified, its other open flows are settled by it (src/broker/settleOpenFlows.ts) and their
    // retries need that connection, so the flows of one elicit turn go on to connect together.
    const elicit = async () => {
      await ctx.forget(login);
      return callTool(ctx, ctx.tokens.get(login)!, service.tool, args, {}, URL_ELICITATION, 'elicit');
    };
    const connected = await ctx.gates.holdThen(login, 'elicit', elicit, 'connected', async (elicited) => {
      const asked = elicited as {
        resultType?: string;
        requestState?: string;
        inputRequests?: { connect?: { params?: { url?: string } } };
      };
      const link = asked.inputRequests?.connect?.params?.url;
      if (asked.resultType !== 'input_required' || !link || !asked.requestState)
        throw new Error(`expected a connect link, got ${JSON.stringify(asked).slice(0, 300)}`);
      await connectInBrowser(
        ctx,
        createTestBrowser({ fetch: timed(ctx.fetch, result, `${ctx.brokerUrl}/oauth/callback/${service.provider}?`) }),
        link,
        login,
        (name) => (step = name),
      );
      step = 'retry';
      const retried = performance.now();
      const answer = await callTool(
        ctx,
        ctx.tokens.get(login)!,
        service.tool,
        args,
        { requestState: asked.requestState, inputResponses: { connect: { action: 'accept' } } },
        URL_ELICITATION,
        'retry',
      );
      result.retryMs = performance.now() - retried;
      return answer as { resultType?: string; structuredContent?: { status?: string } };
    });
    result.gateWaitMs += connected.waitedMs;
    const created = connected.value;
    const made = service.madeBy(created.structuredContent);
    if (created.resultType !== 'complete' || created.structuredContent?.status !== 'created' || made?.title !== title) {
      throw new Error(`the retry did not create "${title}": ${JSON.stringify(created).slice(0, 300)}`);
    }
    result.madeId = made.id;
  } catch (err) {
    result.failure = { step, message: err instanceof Error ? err.message : String(err) };
  }
  result.totalMs = performance.now() - started;
  return result;
}

/**
 * The link in a fresh cookie jar, up to the done page, or to wherever it says that a sibling flow
 * of the user connected first and settled this one.
 */
async function connectInBrowser(
  ctx: FlowContext,
  browser: TestBrowser,
  link: string,
  login: string,
  at: (step: string) => void,
): Promise<void> {
  at('sign in to the broker');
  const first = expectPage(await browser.get(link), 'Sign in to connect');
  const signInHref = /href="(\/login\?[^"]+)"/.exec(first.text)?.[1]?.replace(/&amp;/g, '&');
  if (!signInHref) throw new Error('no sign-in link on the connect page');
  const signInForm = expectPage(await browser.get(new URL(signInHref, ctx.brokerUrl).href), 'name="password"');
  at('review');
  const review = await browser.submitForm(signInForm, { login, password: DEV_PASSWORD });
  if (settledMeanwhile(review)) return;
  at(`sign in at ${ctx.service.name}`);
  const atProvider = await browser.submitForm(
    expectPage(review, `Continue to ${ctx.service.origin}`),
    {},
    { form: '/connect/' },
  );
  if (settledMeanwhile(atProvider)) return;
  at('allow and callback');
  const done = await ctx.service.authorize(browser, atProvider, login, settledMeanwhile);
  if (settledMeanwhile(done)) return;
  expectPage(done, `${ctx.service.name} is connected`);
  if (!done.url.startsWith(`${ctx.brokerUrl}/connect/done?n=`)) throw new Error(`ended on ${done.url}`);
}

/**
 * The browser's fetch, timing the callback request when it verifies (its answer is the 303 to the
 * done page); one that finds its flow settled by a sibling answers 409 and is not a verification.
 */
function timed(fetch: Fetch, result: FlowResult, callbackPrefix: string): Fetch {
  return (async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    const started = performance.now();
    const response = await fetch(input, init);
    if (String(input).startsWith(callbackPrefix)) {
      if (response.status === 303) result.callbackMs = performance.now() - started;
      else if (response.status !== 409) throw new Error(`the callback answered ${response.status}`);
    }
    return response;
  }) as Fetch;
}

/**
 * The user's other flow connected first and settled this one: the connect page says there is nothing
 * to do, the consent is refused as already connected, or the callback as not waiting any more. The
 * user returns to the app and the host's retry is accepted through this flow's own receipt.
 */
function settledMeanwhile(page: BrowserResponse): boolean {
  return (
    (page.status === 200 && page.text.includes('Nothing to do here')) ||
    (page.status === 409 && /already connected|completed meanwhile|not waiting for a response any more/.test(page.text))
  );
}
