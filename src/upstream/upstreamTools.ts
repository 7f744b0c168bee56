import { z } from 'zod';
import { runAccepted } from '../mcp/calls/acceptedCall.js';
import { runConnectionTool } from '../mcp/connectionTool.js';
import type { ConnectionTool } from '../mcp/defineConnectionTool.js';
import { defineTool, parseArguments } from '../mcp/defineTool.js';
import { argumentsDigest } from '../mcp/requestState.js';
import type { McpToolDeps } from '../mcp/toolDeps.js';
import type { DynamicTools, ToolListing } from '../mcp/toolRegistry.js';
import { combineHints } from '../mcp/toolRegistry.js';
import type { Pool } from '../db/pool.js';
import type { Provider } from '../providers/providerConfig.js';
import type { ProtectedDomains } from '../security/protectedDomains.js';
import type { TokenVaultDeps } from '../secrets/tokenVault.js';
import type { Logger } from '../shared/logger.js';
import { countedRequests, type ObserveUpstream } from './countedRequest.js';
import { upstreamCall } from './upstreamCall.js';
import { createUpstreamLists } from './upstreamLists.js';
import type { UpstreamMcp } from './upstreamMcpClient.js';
import { canonicalJson, TOOL_NAME } from './upstreamNames.js';
import { receiptFor, resumeOf } from './upstreamRelay.js';

export interface UpstreamToolsDeps {
  /** The upstream MCP providers (kind mcp), as configured. */
  upstreams: readonly Provider[];
  mcp: UpstreamMcp;
  vault: TokenVaultDeps;
  /** Where operators' pinned snapshots are (upstream_tool_snapshots). */
  pool: Pool;
  logger: Logger;
  /** Counts each request to an upstream (the instance's metrics). */
  observe?: ObserveUpstream;
  /** How long a user's list is kept when the upstream gives no ttlMs (and the most it is kept). */
  listTtlMs?: number;
  /** The domains a relayed link's lookalikes are judged against (the shipped list and the configured providers'). */
  protectedDomains?: ProtectedDomains;
}

const DEFAULT_LIST_TTL_MS = 60_000;
const MAX_FOUND = 1_000;
const ArgumentsSchema = z.looseObject({});

/**
 * The upstream MCP servers' tools on /mcp, the registry's dynamic part: each upstream's list for the
 * user (upstreamLists.ts), and each call a connection call (upstreamCall.ts): a user without a
 * connection gets the connect flow, and an accepted call is sent once through its receipt.
 */
export function createUpstreamTools(deps: UpstreamToolsDeps): DynamicTools<McpToolDeps> {
  const byPrefix = new Map(deps.upstreams.map((p) => [p.upstream!.prefix, p]));
  const ordered = [...deps.upstreams].sort((a, b) => (a.upstream!.prefix < b.upstream!.prefix ? -1 : 1));
  const counted = countedRequests(deps.observe);
  const lists = createUpstreamLists({
    mcp: deps.mcp,
    vault: deps.vault,
    pool: deps.pool,
    logger: deps.logger,
    counted,
    ...(deps.listTtlMs !== undefined && { listTtlMs: deps.listTtlMs }),
  });
  const callDeps = { mcp: deps.mcp, lists, counted, logger: deps.logger, protectedDomains: deps.protectedDomains };

  // Each name's tool, built once (its descriptor is a JSON Schema conversion): names are the caller's, so at most MAX_FOUND.
  const found = new Map<string, ConnectionTool>();
  function find(name: string): ConnectionTool | undefined {
    const known = found.get(name);
    if (known) return known;
    const tool = build(name);
    if (!tool) return undefined;
    found.set(name, tool);
    // Oldest first out: a Map iterates in insertion order.
    if (found.size > MAX_FOUND) found.delete(found.keys().next().value!);
    return tool;
  }

  function build(name: string): ConnectionTool | undefined {
    if (!TOOL_NAME.test(name)) return undefined;
    const provider = byPrefix.get(name.slice(0, name.indexOf('_')));
    if (!provider) return undefined;
    const callOf = (rawArgs: unknown, toolDeps: McpToolDeps) =>
      upstreamCall(
        callDeps,
        provider,
        name,
        parseArguments(name, ArgumentsSchema, rawArgs) as Record<string, unknown>,
        toolDeps,
      );
    const tool = defineTool({
      name,
      title: name,
      description: `A tool of ${provider.displayName}.`,
      inputSchema: ArgumentsSchema,
      handler: async (input, ctx, toolDeps: McpToolDeps) => {
        const args = input as Record<string, unknown>;
        const resume = await resumeOf(toolDeps, ctx, name, argumentsDigest([name, canonicalJson(args)]));
        // A relayed answer goes back to the upstream as the first call went: connected, or through its receipt.
        const asked = resume ? { ...ctx, requestState: undefined, inputResponses: undefined } : ctx;
        const call = upstreamCall(callDeps, provider, name, args, toolDeps, resume);
        if (resume?.receiptId !== undefined)
          return runAccepted(toolDeps.connection, asked, call, await receiptFor(toolDeps, ctx, call, resume.receiptId));
        return runConnectionTool(toolDeps.connection, asked, call);
      },
    });
    return { ...tool, provider: provider.id, scopes: [], connectionCall: callOf };
  }

  return {
    find,
    async list(principal) {
      const parts = await Promise.all(ordered.map((p) => lists.listOne(principal, p)));
      const listed = parts.filter((p): p is ToolListing => p !== undefined);
      if (listed.length === 0) return { tools: [], ttlMs: DEFAULT_LIST_TTL_MS, cacheScope: 'public' };
      return { tools: listed.flatMap((p) => p.tools), ...combineHints(...listed) };
    },
  };
}
