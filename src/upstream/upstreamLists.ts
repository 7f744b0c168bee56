import { createHash } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { UpstreamUnauthorizedError } from '../broker/forgetConnection.js';
import type { Pool } from '../db/pool.js';
import type { ListHints, ToolListing } from '../mcp/toolRegistry.js';
import type { Provider } from '../providers/providerConfig.js';
import { accessTokenFor, type TokenVaultDeps } from '../secrets/tokenVault.js';
import type { Logger } from '../shared/logger.js';
import type { Counted } from './countedRequest.js';
import { findSnapshot } from './snapshotsRepo.js';
import type { UpstreamMcp, UpstreamTool, UpstreamToolList } from './upstreamMcpClient.js';
import { servedName, standInName } from './upstreamNames.js';
import { within } from '../shared/within.js';

export interface UpstreamListsDeps {
  mcp: UpstreamMcp;
  vault: TokenVaultDeps;
  /** Where operators' pinned snapshots are (upstream_tool_snapshots). */
  pool: Pool;
  logger: Logger;
  counted: Counted;
  /** How long a user's list is kept when the upstream gives no ttlMs (and the most it is kept). */
  listTtlMs?: number;
}

const DEFAULT_LIST_TTL_MS = 60_000;
const MAX_LIST_TTL_MS = 10 * 60_000;
const MAX_CACHED_LISTS = 10_000;
// How long a listing waits for an upstream asked without a token: a slow one is shown by its snapshot or
// stand-in meanwhile, and its answer, when it comes, serves the next listing.
const ANONYMOUS_WAIT_MS = 1_500;
// What a host may keep a list holding a pinned snapshot for: an operator's change shows within it.
const SNAPSHOT_TTL_MS = 30_000;

/** A served tool: its tools/list entry and the upstream tool it calls. */
export interface Served {
  descriptor: Record<string, unknown>;
  upstream: UpstreamTool;
}

export interface CachedList {
  served: Map<string, Served>;
  hints: ListHints;
  expiresAt: number;
}

/**
 * Each upstream's tools as a user sees them: their own list, fetched with their upstream token and
 * kept for its ttlMs (keyed by that token's digest, so a list is only ever served to whoever's token
 * fetched it); for a user not connected, the upstream's public list or an operator's snapshot.
 */
export function createUpstreamLists(deps: UpstreamListsDeps) {
  const maxTtl = deps.listTtlMs ?? MAX_LIST_TTL_MS;
  const lists = new Map<string, CachedList>();
  // Lists an upstream answered with cacheScope public: the same for every user, so served to those not connected.
  const publicLists = new Map<string, CachedList>();
  // Upstreams that refused to list their tools without a token, until when: asked again after that.
  const needsToken = new Map<string, number>();
  const anonymousListing = new Map<string, Promise<CachedList | undefined>>();
  const refusedLately = (provider: Provider) => (needsToken.get(provider.id) ?? 0) > Date.now();

  /**
   * For a user not connected to `provider`, what they are shown, the first of: its public list while
   * fresh (an anonymous listing's, or a connected user's the upstream marked public); the list it gives
   * anyone, asked without a token; the operator's snapshot (read each time: pinning shows at once);
   * else the stand-in that leads to the connect link. Never nothing: a host sees every upstream.
   */
  async function unconnectedPart(provider: Provider): Promise<ToolListing> {
    const known = publicLists.get(provider.id);
    let part: CachedList | undefined;
    if (known && known.expiresAt > Date.now()) part = known;
    else if (known && !refusedLately(provider)) {
      // Past its ttlMs: shown while the upstream is asked again, so a slow one holds up no listing.
      void anonymousList(provider);
      part = known;
    } else {
      part = (await within(anonymousList(provider), ANONYMOUS_WAIT_MS))?.value;
    }
    part ??= await findSnapshot(deps.pool, provider.id).then(
      (row) => row && toServed(provider, { tools: row.tools, ttlMs: SNAPSHOT_TTL_MS, cacheScope: 'public' }),
    );
    if (!part) return { tools: [standInDescriptor(provider)], ttlMs: SNAPSHOT_TTL_MS, cacheScope: 'public' };
    return { tools: [...part.served.values()].map((s) => s.descriptor), ...part.hints, cacheScope: 'public' };
  }

  /** The upstream's list asked without a token (one request at a time, and at most once a minute after a refusal). */
  function anonymousList(provider: Provider): Promise<CachedList | undefined> {
    if (refusedLately(provider)) return Promise.resolve(undefined);
    const running = anonymousListing.get(provider.id);
    if (running) return running;
    const asked = deps
      .counted(provider, 'tools/list', () => deps.mcp.listTools(provider.upstream!.url, undefined))
      .then((listed) => {
        // Given to anyone: the same for every user, whatever the upstream says of its scope.
        const part = toServed(provider, { ...listed, cacheScope: 'public' });
        publicLists.set(provider.id, part);
        return part;
      })
      .catch((err: unknown) => {
        if (!(err instanceof UpstreamUnauthorizedError))
          deps.logger.warn({ err, upstream: provider.id }, 'upstream tools not listed without a token');
        needsToken.set(provider.id, Date.now() + DEFAULT_LIST_TTL_MS);
        return undefined;
      })
      .finally(() => anonymousListing.delete(provider.id));
    anonymousListing.set(provider.id, asked);
    return asked;
  }

  const cacheKey = (provider: Provider, token: string) =>
    `${provider.id}\n${createHash('sha256').update(token).digest('base64url')}`;

  function toServed(provider: Provider, listed: UpstreamToolList): CachedList {
    const served = new Map<string, Served>();
    const clashes = new Set<string>();
    for (const tool of listed.tools) {
      const name = servedName(provider.upstream!.prefix, tool.name);
      if (!name) {
        deps.logger.warn(
          { upstream: provider.id, tool: tool.name.slice(0, 128) },
          'upstream tool name too long; not served',
        );
        continue;
      }
      if (served.has(name)) clashes.add(name);
      served.set(name, {
        upstream: tool,
        descriptor: {
          name,
          ...(tool.title !== undefined && { title: tool.title }),
          ...(tool.description !== undefined && { description: tool.description }),
          inputSchema: tool.inputSchema,
          ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
          ...(tool.annotations !== undefined && { annotations: tool.annotations }),
        },
      });
    }
    // Two upstream names that read the same here (`Search`, `search`): neither is served, rather than one at random.
    for (const name of clashes) {
      served.delete(name);
      deps.logger.warn(
        { upstream: provider.id, tool: name },
        'two upstream tools have the same served name; neither is served',
      );
    }
    // In name order, whatever the upstream's: the list is the same for the same tools.
    const sorted = new Map([...served].sort(([a], [b]) => (a < b ? -1 : 1)));
    const ttlMs = Math.min(listed.ttlMs ?? DEFAULT_LIST_TTL_MS, maxTtl);
    const hints: ListHints = { ttlMs, cacheScope: listed.cacheScope === 'public' ? 'public' : 'private' };
    return { served: sorted, hints, expiresAt: Date.now() + ttlMs };
  }

  /** The user's list at `provider`, from the cache while it is fresh. */
  async function listFor(provider: Provider, token: string): Promise<CachedList> {
    const key = cacheKey(provider, token);
    const cached = lists.get(key);
    if (cached && cached.expiresAt > Date.now()) return cached;
    const fresh = toServed(
      provider,
      await deps.counted(provider, 'tools/list', () => deps.mcp.listTools(provider.upstream!.url, token)),
    );
    lists.delete(key);
    lists.set(key, fresh);
    if (fresh.hints.cacheScope === 'public') publicLists.set(provider.id, fresh);
    // Oldest first out: a Map iterates in insertion order.
    while (lists.size > MAX_CACHED_LISTS) lists.delete(lists.keys().next().value!);
    return fresh;
  }

  async function listOne(principal: Principal, provider: Provider): Promise<ToolListing> {
    const token = await accessTokenFor(deps.vault, principal, provider.id);
    if (!token) return unconnectedPart(provider);
    try {
      const { served, hints } = await listFor(provider, token);
      return { tools: [...served.values()].map((s) => s.descriptor), ...hints, cacheScope: 'private' };
    } catch (err) {
      // A refused token is forgotten by the next call of one of its tools, which then asks to connect again.
      if (!(err instanceof UpstreamUnauthorizedError))
        deps.logger.warn({ err, upstream: provider.id }, 'upstream tools not listed');
      return unconnectedPart(provider);
    }
  }

  return { listFor, listOne };
}

export type UpstreamLists = ReturnType<typeof createUpstreamLists>;

/**
 * What a user not connected to an upstream that shows its tools to nobody else is listed: one tool
 * that says so and whose call connects them (upstreamCall.ts), after which the upstream's own are listed.
 */
export function standInDescriptor(provider: Provider): Record<string, unknown> {
  const name = provider.displayName;
  return {
    name: standInName(provider.upstream!.prefix),
    title: `Connect ${name}`,
    description: `${name} (an MCP server behind this broker) lists its tools only to a user connected to it. Call this tool to connect your ${name} account: you are given a link to sign in there, and its tools are then listed in place of this one.`,
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true, openWorldHint: true },
  };
}
