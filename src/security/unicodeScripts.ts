import { createRequire } from 'node:module';

// Script_Extensions (UAX #24) of a code point, from the Unicode Character
// Database as regenerate-unicode-properties ships it. Loaded on the first
// non-ASCII host (every script's set, tens of milliseconds), so a process
// that only ever sees ASCII hosts never pays; each code point is looked up once.

interface CodePointSet {
  contains(codePoint: number): boolean;
}

export interface CodePointScripts {
  /** Script_Extensions: the scripts the character is used with. */
  scripts: ReadonlySet<string>;
  /** Common or Inherited: digits, the hyphen, combining marks, which go with any script. */
  shared: boolean;
  /** The scripts with the writing systems Han, Kana and Hangul belong to (UTS #39 §5.1). */
  augmented: ReadonlySet<string>;
}

const AUGMENTED: Readonly<Record<string, readonly string[]>> = {
  Han: ['Han', 'Jpan', 'Kore', 'Hanb'],
  Hiragana: ['Hiragana', 'Jpan'],
  Katakana: ['Katakana', 'Jpan'],
  Hangul: ['Hangul', 'Kore'],
  Bopomofo: ['Bopomofo', 'Hanb'],
};

let tables: readonly (readonly [name: string, set: CodePointSet])[] | undefined;
const cache = new Map<number, CodePointScripts>();
const CACHE_MAX = 20_000;

function loadTables(): readonly (readonly [string, CodePointSet])[] {
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

/** The scripts of one code point. */
export function scriptsOf(codePoint: number): CodePointScripts {
  const hit = cache.get(codePoint);
  if (hit) return hit;
  tables ??= loadTables();
  const scripts = new Set(tables.filter(([, set]) => set.contains(codePoint)).map(([name]) => name));
  const info = {
    scripts,
    shared: scripts.has('Common') || scripts.has('Inherited'),
    augmented: new Set([...scripts].flatMap((s) => AUGMENTED[s] ?? [s])),
  };
  // Distinct code points seen are few; the bound only stops a flood of different ones growing it.
  if (cache.size < CACHE_MAX) cache.set(codePoint, info);
  return info;
}
