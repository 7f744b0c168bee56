import { z } from 'zod';
import { TOOL_NAME } from './declaredEntry.js';

// A TOOLS_FILE entry that enables a starter tool by name:
// `{ starter: github_list_repos }`, bound to the configured provider built
// from the starter's catalog entry, or `{ starter: …, provider: gh-enterprise }`
// naming that provider where several (or none by that catalog) are configured;
// `name` serves it under another name (the same starter on two providers).

/** A starter tool as config/starter-tools/ writes it (starterTools.ts). */
export interface StarterTool {
  name: string;
  /** The catalog entry it is written for: its `provider` field. */
  catalog: string;
  /** The entry as written, fields unchecked. */
  entry: Readonly<Record<string, unknown>>;
  /** The file it is in, under config/starter-tools/. */
  file: string;
}

/** A configured provider as a reference is bound to it: its id and the catalog entry it was built from (none for a custom entry). */
export interface StarterProvider {
  id: string;
  catalog?: string | undefined;
}

const StarterRefSchema = z.strictObject({
  starter: z.string().regex(TOOL_NAME, 'must be a starter tool name'),
  provider: z.string().min(1).max(32).optional(),
  name: z.string().regex(TOOL_NAME, 'must match ^[a-z][a-z0-9_]{0,63}$').optional(),
});

/** Whether a TOOLS_FILE entry names a starter tool (rather than declaring a tool). */
export function isStarterRef(raw: unknown): raw is { starter: unknown } {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) && 'starter' in raw;
}

/** The name the entry is served under: its `name`, else the starter's. */
export function starterRefName(raw: { starter: unknown; name?: unknown }): string | undefined {
  const name = raw.name ?? raw.starter;
  return typeof name === 'string' ? name : undefined;
}

/**
 * The starter's entry bound to its provider (and renamed), ready to be
 * checked as any TOOLS_FILE entry; or the problems, each naming its field.
 */
export function resolveStarter(
  raw: unknown,
  starters: ReadonlyMap<string, StarterTool>,
  providers: readonly StarterProvider[],
): { entry: Record<string, unknown> } | { problems: string[] } {
  const parsed = StarterRefSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      problems: parsed.error.issues.map((i) =>
        i.code === 'unrecognized_keys'
          ? `${i.keys.join(', ')}: a starter entry takes only starter, provider and name`
          : `${i.path.join('.') || '(entry)'}: ${i.message}`,
      ),
    };
  }
  const ref = parsed.data;
  const starter = starters.get(ref.starter);
  if (!starter)
    return {
      problems: [
        `starter: ${JSON.stringify(ref.starter)} is not a starter tool (starters: ${[...starters.keys()].join(', ') || 'none'})`,
      ],
    };
  const fromCatalog = providers.filter((p) => p.catalog === starter.catalog);
  let provider: string;
  if (ref.provider !== undefined) {
    const named = providers.find((p) => p.id === ref.provider);
    if (!named)
      return {
        problems: [
          `provider: ${JSON.stringify(ref.provider)} is not a configured provider (configured: ${providers.map((p) => p.id).join(', ') || 'none'})`,
        ],
      };
    if (named.catalog !== starter.catalog) {
      const built =
        named.catalog === undefined ? 'is a custom entry' : `is built from the ${named.catalog} catalog entry`;
      return {
        problems: [
          `provider: ${ref.provider} ${built}; ${starter.name} is written for the ${starter.catalog} catalog entry`,
        ],
      };
    }
    provider = named.id;
  } else if (fromCatalog.length === 1) {
    provider = fromCatalog[0]!.id;
  } else if (fromCatalog.length === 0) {
    return {
      problems: [
        `starter: ${starter.name} is written for the ${starter.catalog} catalog entry, and no configured provider is built from it (add a PROVIDERS_FILE entry with catalog: ${starter.catalog})`,
      ],
    };
  } else {
    return {
      problems: [
        `provider: ${starter.name} could be bound to ${fromCatalog.map((p) => p.id).join(' or ')} (each built from the ${starter.catalog} catalog entry); name one`,
      ],
    };
  }
  return { entry: { ...starter.entry, name: ref.name ?? starter.name, provider } };
}
