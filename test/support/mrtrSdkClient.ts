import type { ElicitRequestURLParams, ElicitResult } from '@modelcontextprotocol/client';
import type { BrokerStack } from './brokerStack.js';
import { connectSdkClient, type SdkClient, type Sent } from './sdkClient.js';

// The 2026-07-28 client with URL elicitation declared (test/support/sdkClient.ts), under the
// names test/providers/githubDevSdk.int.test.ts imports.

export type MrtrSent = Sent;
export type MrtrClient = SdkClient;

export function connectMrtr(stack: BrokerStack, token: string, url: (params: ElicitRequestURLParams) => ElicitResult, options: { maxRounds?: number } = {}): Promise<MrtrClient> {
  return connectSdkClient(stack, token, { era: '2026-07-28', url, ...options });
}
