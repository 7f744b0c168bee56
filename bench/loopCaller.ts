import { DEV_PASSWORD } from '../src/dev/devUsers.js';
import type { Fetch } from '../src/shared/httpClient.js';
import { createTestBrowser, type TestBrowser } from '../test/support/testBrowser.js';
import { callTool } from './flowMcp.js';

export interface LoopTarget {
  brokerUrl: string;
  fetch: Fetch;
}

export interface LoopPlan {
  login: string;
  token: string;
  /** Loops calling reports_create with fresh arguments each time (each call a new flow, if allowed). */
  toolLoops: number;
  /** Loops opening `victimLink` in the looper's signed-in browser (each a subject mismatch). */
  linkLoops: number;
  /** Another user's connect link. */
  victimLink: string;
}

export interface LoopStats {
  /** Wall time from start to the last loop's end. */
  ms: number;
  toolCalls: number;
  /** Calls answered with a connect link (a new flow). */
  linksGiven: number;
  /** Calls refused as rate_limited (a quota). */
  refused: number;
  linkViews: number;
  /** Views answered "This link belongs to someone else". */
  mismatches: number;
  /** Anything else (HTTP errors, unexpected answers), with the first one. */
  errors: number;
  firstError: string | undefined;
}

export interface Looper {
  /** Starts every loop. */
  start(): void;
  /** Asks every loop to stop after its call in flight; resolves when all have. */
  stop(): Promise<LoopStats>;
}

const URL_ELICITATION = { elicitation: { url: {} } };

/**
 * One principal calling as fast as its loops can, ignoring every retry hint:
 * what a runaway agent or a hostile user of a valid token does. The browser
 * is signed in to the broker before the loops start, so each view of the
 * victim's link is one request.
 */
export async function prepareLooper(target: LoopTarget, plan: LoopPlan): Promise<Looper> {
  const browser = plan.linkLoops > 0 ? await signIn(target, plan) : undefined;
  const stats: LoopStats = {
    ms: 0,
    toolCalls: 0,
    linksGiven: 0,
    refused: 0,
    linkViews: 0,
    mismatches: 0,
    errors: 0,
    firstError: undefined,
  };
  const failed = (message: string) => {
    stats.errors++;
    stats.firstError ??= message.slice(0, 300);
  };
  let stopped = false;
  let serial = 0;
  let started = 0;
  let loops: Promise<unknown> = Promise.resolve();

  const toolLoop = async () => {
    while (!stopped) {
      const n = serial++;
      stats.toolCalls++;
      try {
        const result = await callTool(
          target,
          plan.token,
          'reports_create',
          { title: `loop ${n}`, body: `Looping call ${n}.` },
          {},
          URL_ELICITATION,
          'loop',
        );
        const error = (result['structuredContent'] as { error?: string } | undefined)?.error;
        if (result['resultType'] === 'input_required') stats.linksGiven++;
        else if (error === 'rate_limited') stats.refused++;
        else failed(`reports_create answered ${JSON.stringify(result)}`);
      } catch (err) {
        failed(err instanceof Error ? err.message : String(err));
      }
    }
  };
  const linkLoop = async () => {
    while (!stopped) {
      stats.linkViews++;
      try {
        const page = await browser!.get(plan.victimLink);
        if (page.status === 403 && page.text.includes('This link belongs to someone else')) stats.mismatches++;
        else failed(`the victim's link answered HTTP ${page.status}`);
      } catch (err) {
        failed(err instanceof Error ? err.message : String(err));
      }
    }
  };

  return {
    start() {
      started = performance.now();
      loops = Promise.all([
        ...Array.from({ length: plan.toolLoops }, toolLoop),
        ...Array.from({ length: plan.linkLoops }, linkLoop),
      ]);
    },
    async stop() {
      stopped = true;
      await loops;
      stats.ms = performance.now() - started;
      return { ...stats };
    },
  };
}

/** Opens the victim's link, signs in to the broker as the looper, and expects the refusal page. */
async function signIn(target: LoopTarget, plan: LoopPlan): Promise<TestBrowser> {
  const browser = createTestBrowser({ fetch: target.fetch });
  const first = await browser.get(plan.victimLink);
  const href = /href="(\/login\?[^"]+)"/.exec(first.text)?.[1]?.replace(/&amp;/g, '&');
  if (!href) throw new Error(`no sign-in link on the victim's connect page (HTTP ${first.status})`);
  const form = await browser.get(new URL(href, target.brokerUrl).href);
  const landed = await browser.submitForm(form, { login: plan.login, password: DEV_PASSWORD });
  if (landed.status !== 403)
    throw new Error(`signed in as ${plan.login}, the victim's link answered HTTP ${landed.status}`);
  return browser;
}
