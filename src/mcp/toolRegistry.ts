import type { Principal } from '../auth/principal.js';
import type { Tool } from './defineTool.js';

/** Cache hints of a tools/list answer (MCP 2026-07-28, caching): private as soon as any part is. */
export interface ListHints {
  ttlMs: number;
  cacheScope: 'public' | 'private';
}

/** A tools/list answer's tools for one caller, with its hints. */
export interface ToolListing extends ListHints {
  tools: Record<string, unknown>[];
}

/**
 * A part of the registry whose tools are known only per caller (an upstream MCP server's): it
 * lists them for a principal and serves a call by name, with names no other tool has.
 */
export interface DynamicTools<D> {
  find(name: string): Tool<D> | undefined;
  list(principal: Principal): Promise<ToolListing>;
}

/** The one source of tools for tools/list, tools/call on both eras, and the re-drive. */
export interface ToolRegistry<D> {
  find(name: string): Tool<D> | undefined;
  /** The broker's own tools first, by name, then the dynamic part's, in its order. */
  list(principal: Principal): Promise<ToolListing>;
  /** Whether the list is the same for every caller (then it may be serialised once). */
  readonly fixed: boolean;
  /** The broker's own tools' names, for an unknown tool's error. */
  readonly names: readonly string[];
}

const OWN_HINTS: ListHints = { ttlMs: 5 * 60 * 1000, cacheScope: 'public' };

/** The registry of `own` tools (a fixed list), and of a dynamic part when there is one. */
export function createToolRegistry<D>(own: readonly Tool<D>[], dynamic?: DynamicTools<D>): ToolRegistry<D> {
  const byName = new Map(own.map((t) => [t.name, t]));
  const descriptors = own.map((t) => t.descriptor);
  return {
    fixed: dynamic === undefined,
    names: [...byName.keys()],
    find: (name) => byName.get(name) ?? dynamic?.find(name),
    async list(principal) {
      if (!dynamic) return { tools: descriptors, ...OWN_HINTS };
      const more = await dynamic.list(principal);
      return { tools: [...descriptors, ...more.tools], ...combineHints(OWN_HINTS, more) };
    },
  };
}

/** The hints of an answer made of parts: the shortest lifetime, private if any part is. */
export function combineHints(...parts: readonly ListHints[]): ListHints {
  return {
    ttlMs: Math.min(...parts.map((p) => p.ttlMs)),
    cacheScope: parts.some((p) => p.cacheScope === 'private') ? 'private' : 'public',
  };
}
