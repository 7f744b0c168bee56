import { z } from 'zod';
import { AppError } from '../src/errors/appError.js';
import { defineConnectionTool, type ConnectionTool } from '../src/mcp/defineConnectionTool.js';
import { completeResult } from '../src/mcp/defineTool.js';
import { providerRefusal } from '../src/providers/providerRefusal.js';

const WhoamiSchema = z.object({ account: z.string().max(200) });

/**
 * The refresh bench's tool, written as an engineer writes one with defineConnectionTool: one read
 * of the bench provider's API (`GET /whoami`) with the connection's access token, renewed first
 * by the vault when it is stale.
 */
export function whoamiTool(provider: string, scopes: readonly string[]): ConnectionTool {
  return defineConnectionTool({
    name: 'refresh_bench_whoami',
    title: 'Who am I at the refresh bench provider',
    description: 'Reads which account your connection to the refresh bench provider is.',
    provider,
    scopes,
    input: z.strictObject({}),
    annotations: { readOnlyHint: true, openWorldHint: true },
    replayable: true,
    async perform({ fetch }) {
      const response = await fetch('/whoami');
      const json: unknown = await response.json().catch(() => undefined);
      if (response.status !== 200) throw providerRefusal('Refresh Bench', response.status, json, 'read the account');
      const parsed = WhoamiSchema.safeParse(json);
      if (!parsed.success)
        throw new AppError('upstream_auth_failed', 'Refresh Bench answered with an unexpected body.');
      return { account: parsed.data.account };
    },
    render: (outcome) => completeResult(`You are ${String(outcome['account'])}.`, outcome),
  });
}
