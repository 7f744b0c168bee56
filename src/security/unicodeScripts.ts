import { createRequire } from 'node:module';

// Script_Extensions (UAX #24) of a code point, from the Unicode Character
// Database as regenerate-unicode-properties ships it. Loaded on the first
// non-ASCII host (about 60 ms for every script), so ASCII-only processes never pay.

interface CodePointSet {
  contains(codePoint: number): boolean;
}

let scripts: readonly (readonly [name: string, set: CodePointSet])[] | undefined;
const cache = new Map<number, ReadonlySet<string>>();
const CACHE_MAX = 20_000;

function loadScripts(): readonly (readonly [string, CodePointSet])[] {
  const require = createRequire(import.meta.url);
  const properties = require('regenerate-unicode-properties') as Map<string, readonly string[]>;
  return (properties.get('Script_Extensions') ?? []).map(
    (name) =>
      [
        name,
        (require(`regenerate-unicode-properties/Script_Extensions/${name}.js`) as { characters: CodePointSet })
          .characters,
      ] as const,
  );
}

/** The scripts a code point is used with (Script_Extensions): Common and Inherited for shared ones. */
export function scriptExtensionsOf(codePoint: number): ReadonlySet<string> {
  const hit = cache.get(codePoint);
  if (hit) return hit;
  scripts ??= loadScripts();
  const found = new Set(scripts.filter(([, set]) => set.contains(codePoint)).map(([name]) => name));
  // Distinct code points seen are few; the bound only stops a flood of different ones growing it.
  if (cache.size < CACHE_MAX) cache.set(codePoint, found);
  return found;
}
