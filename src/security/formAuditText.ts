import { skeleton } from './confusables.js';
import { INVISIBLE } from './displayText.js';

// A form field's name, title or description brought to one spelling, so that
// "API_KEY", "apiKey", "api-key", "ＡＰＩ Ｋｅｙ" and "A.P.I. key" read alike
// (formAuditVocabulary.ts's terms go through the same function).

export interface NormalisedText {
  /** The words, lower case and folded, each set between single spaces: " api key ". */
  spaced: string;
  /** The same letters and digits with no separator at all: "apikey". */
  compact: string;
  /** `spaced` and `compact` with look-alike digits and signs read as letters ("pa55w0rd" → "password"). */
  leetSpaced: string;
  leetCompact: string;
  /**
   * `spaced` and `compact` with each word written wholly in a look-alike alphabet replaced by its
   * UTS #39 skeleton when that is plain Latin ("ΡΙΝ" in Greek capitals → "pln", the skeleton of "PIN");
   * the terms are matched here by their own skeletons (formAuditVocabulary.ts).
   */
  lookalikeSpaced: string;
  lookalikeCompact: string;
  /** A word mixes letters of two alphabets whose letters pass for one another ("раssword" with a Cyrillic р). */
  mixedScript: boolean;
}

const INVISIBLE_RUN = new RegExp(INVISIBLE.source, 'gu');
// Case boundaries inside an identifier: apiKey → api Key, APIKey → API Key; letters from digits: cvv2 → cvv 2;
// and a script written without spaces from one written with them: CVV码 → CVV 码.
const CAMEL = new RegExp(
  [
    '(?<=[\\p{Ll}\\p{N}])(?=\\p{Lu})',
    '(?<=\\p{Lu})(?=\\p{Lu}\\p{Ll})',
    '(?<=\\p{L})(?=\\p{N})',
    '(?<=\\p{N})(?=\\p{L})',
    '(?<=[\\p{sc=Han}\\p{sc=Hira}\\p{sc=Kana}])(?=[\\p{sc=Latn}\\p{sc=Cyrl}\\p{sc=Grek}])',
    '(?<=[\\p{sc=Latn}\\p{sc=Cyrl}\\p{sc=Grek}])(?=[\\p{sc=Han}\\p{sc=Hira}\\p{sc=Kana}])',
  ].join('|'),
  'gu',
);
// Accents of the alphabets that write them as marks: contraseña → contrasena, Schlüssel → Schlussel, ключ stays.
const ACCENT = /(?<=[\p{Script=Latin}\p{Script=Cyrillic}\p{Script=Greek}])\p{M}+/gu;
const SEPARATORS = /[^\p{L}\p{N}\p{M}]+/u;
const LEET: Readonly<Record<string, string>> = {
  '0': 'o',
  '1': 'i',
  '3': 'e',
  '4': 'a',
  '5': 's',
  '7': 't',
  '@': 'a',
  $: 's',
};
const LEET_CHARS = /[013457@$]/g;
// The alphabets whose letters stand in for Latin ones (Unicode's confusables.txt is mostly these); UTS #39's
// moderately restrictive profile, which browsers apply to hosts, already refuses Latin beside Cyrillic or Greek.
const LOOKALIKE_SCRIPTS = [
  /\p{Script=Latin}/u,
  /\p{Script=Cyrillic}/u,
  /\p{Script=Greek}/u,
  /\p{Script=Armenian}/u,
  /\p{Script=Cherokee}/u,
];

export function normaliseText(text: string): NormalisedText {
  // NFKC first: full-width forms, ligatures, circled and mathematical letters become plain ones.
  const visible = text.normalize('NFKC').replace(INVISIBLE_RUN, '');
  const words = wordsOf(visible, fold);
  const leetWords = wordsOf(
    visible.replace(LEET_CHARS, (c) => LEET[c] ?? c),
    fold,
  );
  const lookalikeWords = words.some(isLookalike) ? wordsOf(visible, lookalikeOrFolded) : words;
  return {
    spaced: ` ${words.join(' ')} `,
    compact: words.join(''),
    leetSpaced: ` ${leetWords.join(' ')} `,
    leetCompact: leetWords.join(''),
    lookalikeSpaced: ` ${lookalikeWords.join(' ')} `,
    lookalikeCompact: lookalikeWords.join(''),
    mixedScript: words.some(mixesScripts),
  };
}

function wordsOf(text: string, spell: (word: string) => string): string[] {
  return joinSpelledOut(
    text
      .replace(CAMEL, ' ')
      .split(SEPARATORS)
      .filter((w) => w !== '')
      .map(spell),
  );
}

// A word of a look-alike alphabet with no Latin letter: Latin beside them is mixedScript's case.
const isLookalike = (word: string) =>
  !LOOKALIKE_SCRIPTS[0]!.test(word) && LOOKALIKE_SCRIPTS.slice(1).some((script) => script.test(word));

/** Such a word's skeleton, taken in the case it was written (Greek Ν is N, ν is v), when that is plain Latin. */
function lookalikeOrFolded(word: string): string {
  if (!isLookalike(word)) return fold(word);
  const latin = skeleton(word);
  return /^[a-z0-9]+$/.test(latin) ? latin : fold(word);
}

function fold(text: string): string {
  return text
    .toLowerCase()
    .replace(/ß/g, 'ss')
    .replace(/ı/g, 'i')
    .replace(/ς/g, 'σ')
    .normalize('NFD')
    .replace(ACCENT, '')
    .normalize('NFC');
}

/** Letters written one by one ("p a s s w o r d", "P.I.N") are read as the word they spell. */
function joinSpelledOut(words: string[]): string[] {
  const out: string[] = [];
  let run: string[] = [];
  const flush = () => {
    if (run.length > 1) out.push(run.join(''));
    else out.push(...run);
    run = [];
  };
  for (const word of words) {
    if ([...word].length === 1 && /\p{L}/u.test(word)) run.push(word);
    else {
      flush();
      out.push(word);
    }
  }
  flush();
  return out;
}

function mixesScripts(word: string): boolean {
  return LOOKALIKE_SCRIPTS.filter((script) => script.test(word)).length > 1;
}
