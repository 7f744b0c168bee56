import { runTs } from './brokerProcess.js';
import type { BrokerStack } from './brokerStack.js';
import { tokenFor } from './mcpWire.js';

/**
 * Runs `broker ledger …` (or another operator command, `command`) as a separate process against a
 * stack's database, as `login` (default: the demo operator `ops`), with an access token from the
 * stack's identity provider in BROKER_OPERATOR_TOKEN, and `env` beside (e.g. SECRET_KEYS).
 */
export async function operatorCli(
  stack: BrokerStack,
  login = 'ops',
  {
    command = 'ledger',
    env: extra = {},
  }: { command?: 'ledger' | 'keys' | 'sessions' | 'upstreams' | 'connections'; env?: Record<string, string> } = {},
): Promise<(...args: string[]) => Promise<{ code: number | null; output: string }>> {
  const url = new URL(stack.db.url.reveal());
  url.searchParams.set('options', `-c search_path=${stack.db.schema}`);
  const env = {
    NODE_ENV: 'development',
    DATABASE_URL: url.href,
    DATA_DIR: stack.dataDir,
    OIDC_ISSUER: stack.dev.idp.issuer,
    PUBLIC_URL: stack.brokerUrl,
    BROKER_OPERATOR_TOKEN: await tokenFor(stack, login),
    // The stack's development upstream MCP server where it runs one; 0 (left out) where it runs none.
    DEV_UPSTREAM_PORT: stack.dev.upstream ? new URL(stack.dev.upstream.url).port : '0',
    ...extra,
  };
  return async (...args) => {
    const run = runTs('src/cli/broker.ts', [command, ...args], env);
    return { code: (await run.exited).code, output: run.output() };
  };
}
