import { isAscii } from './confusables.js';
import { scriptsOf, type CodePointScripts } from './unicodeScripts.js';

// UTS #39 §5.2 restriction levels, per label, as browsers apply them to
// internationalised domain names (Chromium's IDN display policy uses the
// Moderately Restrictive level): a label is one script, or one of the
// Highly Restrictive CJK mixes, or Latin plus one other Recommended script
// (UAX #31) that is neither Cyrillic nor Greek.

const HIGHLY_RESTRICTIVE: readonly ReadonlySet<string>[] = [
  new Set(['Latin', 'Han', 'Hiragana', 'Katakana']),
  new Set(['Latin', 'Han', 'Bopomofo']),
  new Set(['Latin', 'Han', 'Hangul']),
];
// UAX #31's Recommended Scripts, less Latin (the partner) and Cyrillic and Greek (excluded by the level).
const MODERATE_PARTNERS = new Set(
  (
    'Arabic Armenian Bengali Bopomofo Devanagari Ethiopic Georgian Gujarati Gurmukhi Han Hangul Hebrew Hiragana ' +
    'Kannada Katakana Khmer Lao Malayalam Myanmar Oriya Sinhala Tamil Telugu Thaana Thai Tibetan'
  ).split(' '),
);

/** The label's characters that belong to particular scripts (Common and Inherited left out). */
function ownCharacters(label: string): CodePointScripts[] {
  const own: CodePointScripts[] = [];
  for (const ch of label) {
    const info = scriptsOf(ch.codePointAt(0)!);
    if (!info.shared) own.push(info);
  }
  return own;
}

/** UTS #39 §5.1 resolved script set: the scripts every character can be written in; undefined when none has one. */
function resolvedScripts(own: readonly CodePointScripts[]): string[] | undefined {
  let resolved: string[] | undefined;
  for (const { augmented } of own) resolved = resolved ? resolved.filter((s) => augmented.has(s)) : [...augmented];
  return resolved;
}

function coveredBy(own: readonly CodePointScripts[], allowed: (script: string) => boolean): boolean {
  return own.every(({ scripts }) => {
    for (const s of scripts) if (allowed(s)) return true;
    return false;
  });
}

/**
 * The scripts a label mixes when it is outside the Moderately Restrictive
 * level, else undefined. An ASCII label (Latin and Common) never is.
 */
export function mixedScripts(label: string): string[] | undefined {
  if (isAscii(label)) return undefined;
  const own = ownCharacters(label);
  const resolved = resolvedScripts(own);
  if (resolved === undefined || resolved.length > 0) return undefined;
  if (HIGHLY_RESTRICTIVE.some((allowed) => coveredBy(own, (s) => allowed.has(s)))) return undefined;
  // Latin and one partner: the partner is a script of the first character Latin does not cover.
  const first = own.find(({ scripts }) => !scripts.has('Latin'));
  for (const partner of first?.scripts ?? []) {
    if (MODERATE_PARTNERS.has(partner) && coveredBy(own, (s) => s === 'Latin' || s === partner)) return undefined;
  }
  return [...new Set(own.map(({ scripts }) => [...scripts][0]!))].sort();
}

/** The script of a label written wholly in one script other than Latin (whole-script confusables), else undefined. */
export function wholeScriptOf(label: string): string | undefined {
  if (isAscii(label)) return undefined;
  const resolved = resolvedScripts(ownCharacters(label));
  if (resolved === undefined || resolved.length === 0 || resolved.includes('Latin')) return undefined;
  return resolved.sort()[0];
}
