import type { FaultBroker } from './faultBroker.js';
import {
  consentAndAuthorize,
  GITHUB_FORMS,
  openConnectLink,
  REPORTS_FORMS,
  retryConnection,
  URL_CAPS,
} from './connectFlow.js';
import { initialize, isElicitation, sleep, type Session } from './legacyFaultScenarios.js';
import type { JsonRpc } from './legacyExchange.js';
import { callTool, type WireResponse } from './mcpWire.js';

// The faults suite's MCP host and user: alice's reports_create driven to its end on each lineage,
// the way a host retries (a new call after an error, the same arguments) and the user finishes or
// starts again the connect link she was given, across a broker that is killed and restarted.

export interface HostOp {
  title: string;
  /** reports_create (the Report Service dedupes by Idempotency-Key) unless said otherwise. */
  tool: string;
  args: Record<string, string>;
  /** The provider's consent forms for its connect link. */
  forms: typeof REPORTS_FORMS;
  /** The host got the created report (or issue) back. */
  done: boolean;
}

export const hostOp = (title: string): HostOp => ({
  title,
  tool: 'reports_create',
  args: { title, body: `body of ${title}` },
  forms: REPORTS_FORMS,
  done: false,
});

/** alice's github_create_issue in alice/demo: GitHub takes no idempotency key, so it is not replayable. */
export const githubOp = (title: string): HostOp => ({
  title,
  tool: 'github_create_issue',
  args: { repository: 'alice/demo', title, body: `body of ${title}` },
  forms: GITHUB_FORMS,
  done: false,
});

// How often the host calls again after "in progress" or a dropped connection, and for how long.
const ATTEMPTS = 30;
const PAUSE_MS = 1_000;

/** alice opens the link and connects; returns whether the broker's done page answered. */
export async function connectInBrowser(
  broker: FaultBroker,
  url: string,
  forms: typeof REPORTS_FORMS = REPORTS_FORMS,
): Promise<boolean> {
  const run = await openConnectLink(broker.stack, url, 'alice');
  const done = await consentAndAuthorize(broker.stack, run, 'alice', 'Allow', forms);
  return done.url.startsWith(`${broker.url}/connect/done`);
}

interface ToolResult {
  resultType?: string;
  isError?: boolean;
  requestState?: string;
  inputRequests?: { connect?: { params?: { url?: string } } };
  structuredContent?: { report?: { id: string }; issue?: { number: number } };
  content?: { text?: string }[];
}

const textOf = (r: ToolResult | undefined) => (r?.content ?? []).map((c) => c.text ?? '').join(' ');
const inProgress = (text: string) => /call again|in progress|being performed/i.test(text);
const forOperator = (text: string) => /recorded for an operator/i.test(text);

/** The first 2026-07-28 call: its URL elicitation (link and requestState). */
export async function mrtrAsk(broker: FaultBroker, token: string, op: HostOp): Promise<{ url: string; state: string }> {
  const response = await callTool(broker.stack, token, op.tool, op.args, {}, URL_CAPS);
  const result = response.json.result as ToolResult | undefined;
  const url = result?.inputRequests?.connect?.params?.url;
  if (result?.resultType !== 'input_required' || !url || !result.requestState)
    throw new Error(`expected a URL elicitation, got ${response.text}`);
  return { url, state: result.requestState };
}

/**
 * The 2026-07-28 host from here to the end: retries with `state` (accept), or calls afresh without
 * one; a new or unfinished link is finished by the user first; "in progress" or a dropped
 * connection is called again. Returns once the report came back, or throws with the last answer.
 */
export async function mrtrFinish(
  broker: FaultBroker,
  token: string,
  op: HostOp,
  start: { state?: string; linkToFinish?: string; finishedLinks?: string[] } = {},
): Promise<void> {
  let state = start.state;
  let pendingLink = start.linkToFinish;
  const finished = new Set(start.finishedLinks ?? []);
  let last = '';
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (pendingLink && (await connectInBrowser(broker, pendingLink, op.forms).catch(() => false))) {
      finished.add(pendingLink);
      pendingLink = undefined;
    }
    let response: WireResponse;
    try {
      response = state
        ? await retryConnection(broker.stack, token, op.tool, op.args, state, 'accept')
        : await callTool(broker.stack, token, op.tool, op.args, {}, URL_CAPS);
    } catch (err) {
      last = String(err);
      await sleep(PAUSE_MS);
      continue;
    }
    last = response.text;
    const result = response.json.result as ToolResult | undefined;
    if (result?.resultType === 'input_required') {
      state = result.requestState;
      const url = result.inputRequests?.connect?.params?.url;
      // A link the user already finished is only waited for; a new one (a new flow) she opens.
      if (url && !finished.has(url)) pendingLink = url;
      continue;
    }
    if (result && !result.isError && (result.structuredContent?.report || result.structuredContent?.issue)) {
      op.done = true;
      return;
    }
    // Not done, and not to be sent again: the operator reconciles it (figures count it as theirs).
    if (result?.isError && forOperator(textOf(result))) return;
    if (result?.isError && inProgress(textOf(result))) {
      await sleep(PAUSE_MS);
      continue;
    }
    throw new Error(`${op.tool} ${op.title}: ${response.status} ${response.text}`);
  }
  throw new Error(`${op.tool} ${op.title} never finished; last answer: ${last}`);
}

/** A 2025-11-25 nested call up to its elicitation, which the host accepts: the call then waits for the user. */
export async function nestedAsk(
  broker: FaultBroker,
  token: string,
  op: HostOp,
): Promise<{ session: Session; url: string; answer: (timeoutMs: number) => Promise<JsonRpc> }> {
  const session = await initialize(broker.stack, token);
  const call = await session.start('tools/call', { name: op.tool, arguments: op.args });
  const asked = await call.next(isElicitation);
  void session.send({ id: asked.id, result: { action: 'accept' } }).catch(() => undefined);
  return {
    session,
    url: asked.params!['url'] as string,
    answer: (timeoutMs) => call.next((m) => m.id === call.requestId, timeoutMs),
  };
}

/** A -32042 call (LEGACY_URL_ELICITATION=error): its link. */
export async function errorAsk(broker: FaultBroker, token: string, op: HostOp): Promise<string> {
  const session = await initialize(broker.stack, token);
  const { final } = await session.call(op.tool, op.args);
  const elicitations = (final.error?.data as { elicitations?: { url: string }[] } | undefined)?.elicitations;
  if (final.error?.code !== -32042 || !elicitations?.[0])
    throw new Error(`expected -32042, got ${JSON.stringify(final)}`);
  return elicitations[0].url;
}

/**
 * The 2025-11-25 host from here to the end: the identical call again on a new session (the old one
 * died with its broker); an elicitation on its stream is accepted and its link finished by the
 * user; a -32042 has its link finished, then the call is made again; "in progress" or a dropped
 * connection is called again.
 */
export async function legacyFinish(
  broker: FaultBroker,
  token: string,
  op: HostOp,
  start: { linkToFinish?: string } = {},
): Promise<void> {
  let pendingLink = start.linkToFinish;
  let last = '';
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (pendingLink && (await connectInBrowser(broker, pendingLink, op.forms).catch(() => false)))
      pendingLink = undefined;
    let final: JsonRpc;
    try {
      const session = await initialize(broker.stack, token);
      const call = await session.start('tools/call', { name: op.tool, arguments: op.args });
      const first = await call.next((m) => m.id === call.requestId || isElicitation(m), 60_000);
      if (isElicitation(first)) {
        await session.send({ id: first.id, result: { action: 'accept' } });
        // Finishing a link again is harmless (its flow is verified once); a new flow needs it.
        await connectInBrowser(broker, first.params!['url'] as string, op.forms).catch(() => false);
        pendingLink = undefined;
        final = await call.next((m) => m.id === call.requestId, 60_000);
      } else final = first;
      await session.end().catch(() => undefined);
    } catch (err) {
      last = String(err);
      await sleep(PAUSE_MS);
      continue;
    }
    last = JSON.stringify(final);
    const result = final.result as ToolResult | undefined;
    if (result && !result.isError && result.structuredContent?.report) {
      op.done = true;
      return;
    }
    const elicitations = (final.error?.data as { elicitations?: { url: string }[] } | undefined)?.elicitations;
    if (final.error?.code === -32042 && elicitations?.[0]) {
      pendingLink = elicitations[0].url;
      continue;
    }
    if (result?.isError && forOperator(textOf(result))) return;
    if (result?.isError && inProgress(textOf(result))) {
      await sleep(PAUSE_MS);
      continue;
    }
    throw new Error(`${op.tool} ${op.title}: ${last}`);
  }
  throw new Error(`${op.tool} ${op.title} never finished; last answer: ${last}`);
}
