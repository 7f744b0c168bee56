import { DEV_PASSWORD } from '../src/dev/devUsers.js';
import { launchChromium } from '../test/support/chromium.js';
import { runFlow, type FlowContext, type FlowResult } from './flowDriver.js';
import { callTool } from './flowMcp.js';
import type { FlowStack } from './flowStack.js';

// The soak's load (bench/soak.ts), each part a loop that runs until the window's deadline and
// counts what it did: tool calls on POST /mcp, connect flows in a scripted browser, one connect
// flow in a real Chromium, and 2025-11-25 sessions opened, used and ended.

export interface WindowCounts {
  calls: number;
  callMs: number[];
  flows: FlowResult[];
  chromiumFlows: number;
  legacySessions: number;
  /** What went wrong on the clients' side: each a short line. */
  errors: string[];
}

export const emptyCounts = (): WindowCounts => ({
  calls: 0,
  callMs: [],
  flows: [],
  chromiumFlows: 0,
  legacySessions: 0,
  errors: [],
});

const workspaceOf = (login: string) => `file:///work/notes/${login}`;
const short = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 200);

/** notes_list as `login`, again and again, measuring each round trip. */
export async function callLoop(
  stack: FlowStack,
  token: string,
  login: string,
  until: number,
  counts: WindowCounts,
): Promise<void> {
  while (Date.now() < until) {
    const started = performance.now();
    try {
      const result = await callTool(stack, token, 'notes_list', { workspaceUri: workspaceOf(login) }, {}, {});
      if (result['resultType'] !== 'complete' || result['isError'] === true)
        throw new Error(`notes_list answered ${JSON.stringify(result).slice(0, 160)}`);
      counts.calls += 1;
      counts.callMs.push(performance.now() - started);
    } catch (err) {
      counts.errors.push(`tools/call: ${short(err)}`);
    }
  }
}

/** Complete connect flows of `logins` in turn, one at a time (a low rate), each ending in a created report. */
export async function flowLoop(
  ctx: FlowContext,
  logins: readonly string[],
  prefix: string,
  until: number,
  counts: WindowCounts,
  next: () => number,
): Promise<void> {
  while (Date.now() < until) {
    const index = next();
    const login = logins[index % logins.length]!;
    const result = await runFlow(ctx, index, login, `${prefix}${index}`);
    counts.flows.push(result);
    if (result.failure) {
      counts.errors.push(`flow ${index} at ${result.failure.step}: ${result.failure.message}`);
      // A failing flow fails fast: pause rather than fill the window with failures.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

/** 2025-11-25 sessions: initialize, three notes_list calls, DELETE; again until the deadline. */
export async function legacyLoop(
  stack: FlowStack,
  token: string,
  login: string,
  until: number,
  counts: WindowCounts,
): Promise<void> {
  const post = async (headers: Record<string, string>, body: unknown) => {
    const response = await stack.fetch(`${stack.brokerUrl}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify(body),
    });
    return { status: response.status, session: response.headers.get('mcp-session-id'), text: await response.text() };
  };
  while (Date.now() < until) {
    let session: Record<string, string> | undefined;
    try {
      const init = await post(
        {},
        {
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak', version: '1' } },
        },
      );
      if (init.status !== 200 || !init.session) throw new Error(`initialize answered ${init.status}`);
      session = { 'mcp-session-id': init.session, 'mcp-protocol-version': '2025-11-25' };
      await post(session, { jsonrpc: '2.0', method: 'notifications/initialized' });
      for (let id = 1; id <= 3; id++) {
        const call = await post(session, {
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'notes_list', arguments: { workspaceUri: workspaceOf(login) } },
        });
        // 2025-11-25 results carry no resultType.
        if (call.status !== 200 || !call.text.includes('"result"') || call.text.includes('"isError":true'))
          throw new Error(`a legacy notes_list answered ${call.status} ${call.text.slice(0, 160)}`);
      }
    } catch (err) {
      counts.errors.push(`legacy session: ${short(err)}`);
    } finally {
      if (session) {
        const ended = await stack.fetch(`${stack.brokerUrl}/mcp`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${token}`, ...session },
        });
        if (ended.status >= 300) counts.errors.push(`legacy session: DELETE answered ${ended.status}`);
        else counts.legacySessions += 1;
      }
    }
  }
}

/** One connect flow in Debian's Chromium, as a person would click it, ending in a created report. */
export async function chromiumFlow(
  stack: FlowStack,
  token: string,
  login: string,
  index: number,
  title: string,
  counts: WindowCounts,
  forget: () => Promise<void>,
): Promise<void> {
  const started = performance.now();
  // Counted with the scripted flows: bench/flowVerify.ts checks that each made its report once.
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
  counts.flows.push(result);
  const browser = await launchChromium(stack.certPem);
  try {
    await forget();
    const args = { title, body: 'Soak report made in Chromium.' };
    const caps = { elicitation: { url: {} } };
    const asked = (await callTool(stack, token, 'reports_create', args, {}, caps)) as {
      requestState?: string;
      inputRequests?: { connect?: { params?: { url?: string } } };
    };
    const link = asked.inputRequests?.connect?.params?.url;
    if (!link || !asked.requestState) throw new Error(`no connect link: ${JSON.stringify(asked).slice(0, 160)}`);
    const page = await (await browser.newContext()).newPage();
    await page.goto(link);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.origin === stack.dev.idp.issuer);
    await page.fill('input[name="login"]', login);
    await page.fill('input[name="password"]', DEV_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname.startsWith('/connect/'));
    await page.getByRole('button', { name: `Continue to ${stack.dev.reports.issuer}` }).click();
    await page.waitForURL((url) => url.origin === stack.dev.reports.issuer);
    // The Report Service asks its own sign-in once per browser, then its consent.
    if (await page.locator('input[name="password"]').count()) {
      await page.fill('input[name="login"]', login);
      await page.fill('input[name="password"]', DEV_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
    }
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.origin === stack.brokerUrl && url.pathname === '/connect/done');
    const done = (await callTool(
      stack,
      token,
      'reports_create',
      args,
      { requestState: asked.requestState, inputResponses: { connect: { action: 'accept' } } },
      caps,
    )) as { structuredContent?: { status?: string; report?: { id?: string } } };
    if (done.structuredContent?.status !== 'created')
      throw new Error(`the retry answered ${JSON.stringify(done).slice(0, 160)}`);
    result.madeId = done.structuredContent.report?.id;
    counts.chromiumFlows += 1;
  } catch (err) {
    result.failure = { step: 'chromium', message: short(err) };
    counts.errors.push(`chromium flow: ${short(err)}`);
  } finally {
    result.totalMs = performance.now() - started;
    await browser.close();
  }
}
