import {
  UrlElicitationRequiredError,
  type ElicitRequestFormParams,
  type ElicitRequestURLParams,
  type ElicitResult,
} from '@modelcontextprotocol/client';
import type { BrokerStack } from './brokerStack.js';
import { connectSdkClient, type SdkClient } from './sdkClient.js';

// The official SDK client at 2025-11-25 (test/support/sdkClient.ts) as the tests' legacy host,
// and what they do with it.

export const LEGACY = '2025-11-25';

export type LegacyClient = SdkClient;

export interface Answers {
  url?: (params: ElicitRequestURLParams) => ElicitResult;
  form?: (params: ElicitRequestFormParams) => ElicitResult;
}

const cancel = (): ElicitResult => ({ action: 'cancel' });

/** A 2025-11-25 host that declares both elicitation modes, connected; an ask without an answer here is cancelled. */
export function connectLegacy(stack: BrokerStack, token: string, answers: Answers): Promise<LegacyClient> {
  return connectSdkClient(stack, token, { era: LEGACY, url: answers.url ?? cancel, form: answers.form ?? cancel });
}

export async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Error-level log lines (pino level 50 and up): an unexposed failure inside the broker. */
export function internalErrors(stack: BrokerStack): string[] {
  return stack.logs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
}

export async function closeLegacy(legacy: LegacyClient): Promise<void> {
  await legacy.transport.terminateSession().catch(() => undefined);
  await legacy.client.close();
}

// Defined with the recording it reads; test/providers/githubDevSdk.int.test.ts imports it from here.
export type Created = { status: string; report: { id: string; title: string } };

/** A tools/call the broker must answer with -32042: the SDK's UrlElicitationRequiredError, anything else fails the test. */
export async function expectUrlElicitation(
  legacy: LegacyClient,
  name: string,
  args: Record<string, unknown>,
): Promise<UrlElicitationRequiredError> {
  const failure = await legacy.client.callTool({ name, arguments: args }).then(
    (result) => new Error(`expected -32042, got a result: ${JSON.stringify(result).slice(0, 300)}`),
    (err: unknown) => err,
  );
  if (!(failure instanceof UrlElicitationRequiredError))
    throw failure instanceof Error ? failure : new Error(String(failure));
  return failure;
}
