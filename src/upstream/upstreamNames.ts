import type { Provider } from '../providers/providerConfig.js';

// MCP 2026-07-28 tool names are 1-128 of [A-Za-z0-9_.-]; the broker's are at most 64 of [a-z0-9_-].
export const TOOL_NAME = /^[a-z0-9_-]{1,64}$/;

/** `<prefix>_<tool>` for an upstream tool: lower case, other characters as `_`; undefined when longer than 64. */
export function servedName(prefix: string, upstreamName: string): string | undefined {
  const name = `${prefix}_${upstreamName.toLowerCase().replace(/[^a-z0-9_-]/g, '_')}`;
  return TOOL_NAME.test(name) ? name : undefined;
}

/**
 * The names a start-up refuses: an upstream whose prefix is the first word of one of the broker's
 * own tools (`notes` beside `notes_delete`). Prefixes have no `_`, and each is one upstream's, so
 * upstreams' names cannot meet each other.
 */
export function prefixCollisions(ownNames: readonly string[], upstreams: readonly Provider[]): string[] {
  return upstreams.flatMap((p) => {
    const prefix = p.upstream!.prefix;
    const taken = ownNames.filter((n) => n.split('_')[0] === prefix);
    return taken.length === 0
      ? []
      : [
          `${p.id}: prefix ${prefix} would serve names beside the broker's own ${taken.join(', ')}: choose another prefix`,
        ];
  });
}

/** JSON with object keys sorted at every level: equal arguments, one digest. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** The stand-in tool a user not connected to an upstream is listed (upstreamLists.ts): `<prefix>_connect`. */
export const standInName = (prefix: string): string => `${prefix}_connect`;
