import { isAscii } from './confusables.js';
import { scriptExtensionsOf } from './unicodeScripts.js';

// UTS #39 §5.2 restriction levels, per label, as browsers apply them to
// internationalised domain names (Chromium's IDN display policy uses the
// Moderately Restrictive level): a label is one script, or one of the
// Highly Restrictive CJK mixes, or Latin plus one other Recommended script
// (UAX #31) that is neither Cyrillic nor Greek.

// Common and Inherited characters (digits, the hyphen, combining marks) go with any script.
const SHARED = new Set(['Common', 'Inherited']);
// UTS #39 §5.1: Han, Kana and Hangul count as the writing systems they are part of.
const AUGMENTED: Readonly<Record<string, readonly string[]>> = {
  Han: ['Han', 'Jpan', 'Kore', 'Hanb'],
  Hiragana: ['Hiragana', 'Jpan'],
  Katakana: ['Katakana', 'Jpan'],
  Hangul: ['Hangul', 'Kore'],
  Bopomofo: ['Bopomofo', 'Hanb'],
};
const HIGHLY_RESTRICTIVE: readonly ReadonlySet<string>[] = [
  new Set(['Latin', 'Han', 'Hiragana', 'Katakana']),
  new Set(['Latin', 'Han', 'Bopomofo']),
  new Set(['Latin', 'Han', 'Hangul']),
];
// UAX #31's Recommended Scripts, less Latin (the partner) and Cyrillic and Greek (excluded by the level).
const MODERATE_PARTNERS = (
  'Arabic Armenian Bengali Bopomofo Devanagari Ethiopic Georgian Gujarati Gurmukhi Han Hangul Hebrew Hiragana ' +
  'Kannada Katakana Khmer Lao Malayalam Myanmar Oriya Sinhala Tamil Telugu Thaana Thai Tibetan'
)
  .split(' ')
  .map((partner) => new Set(['Latin', partner]));

/** The scripts of a label's own characters (Common and Inherited left out). */
function scriptSets(label: string): ReadonlySet<string>[] {
  const sets: ReadonlySet<string>[] = [];
  for (const ch of label) {
    const scx = scriptExtensionsOf(ch.codePointAt(0)!);
    if (![...scx].some((s) => SHARED.has(s))) sets.push(scx);
  }
  return sets;
}

/** UTS #39 §5.1 resolved script set: the scripts every character of the label can be written in. */
function resolvedScripts(sets: readonly ReadonlySet<string>[]): Set<string> | undefined {
  let resolved: Set<string> | undefined;
  for (const set of sets) {
    const augmented = new Set([...set].flatMap((s) => AUGMENTED[s] ?? [s]));
    resolved = resolved ? new Set([...resolved].filter((s) => augmented.has(s))) : augmented;
  }
  return resolved;
}

const coveredBy = (sets: readonly ReadonlySet<string>[], allowed: ReadonlySet<string>) =>
  sets.every((set) => [...set].some((s) => allowed.has(s)));

/**
 * The scripts a label mixes when it is outside the Moderately Restrictive
 * level, else undefined. An ASCII label (Latin and Common) never is.
 */
export function mixedScripts(label: string): string[] | undefined {
  if (isAscii(label)) return undefined;
  const sets = scriptSets(label);
  const resolved = resolvedScripts(sets);
  if (resolved === undefined || resolved.size > 0) return undefined;
  if (HIGHLY_RESTRICTIVE.some((allowed) => coveredBy(sets, allowed))) return undefined;
  if (MODERATE_PARTNERS.some((allowed) => coveredBy(sets, allowed))) return undefined;
  return [...new Set(sets.map((set) => [...set][0]!))].sort();
}

/** The script of a label written wholly in one script other than Latin (whole-script confusables), else undefined. */
export function wholeScriptOf(label: string): string | undefined {
  if (isAscii(label)) return undefined;
  const resolved = resolvedScripts(scriptSets(label));
  if (resolved === undefined || resolved.size === 0 || resolved.has('Latin')) return undefined;
  return [...resolved].sort()[0];
}
