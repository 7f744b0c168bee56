import { skeleton } from './confusables.js';
import { SECRET_TERMS, type SecretConcept, type TermLanguage } from './formAuditTerms.js';
import { normaliseText, type NormalisedText } from './formAuditText.js';

// formAuditTerms.ts's table compiled once into regular expressions over the
// readings of a normalised text (spaced words and compact letters, each also in
// leet, and with look-alike alphabets' words as their skeletons).

type Reading = 'spaced' | 'compact' | 'leetSpaced' | 'leetCompact';
type LookalikeReading = 'lookalikeSpaced' | 'lookalikeCompact';

interface Matcher {
  readings: readonly Reading[];
  /** Letters every match contains: a text without them is passed over without running the pattern. */
  anchor: string;
  pattern: RegExp;
  /** The same term by its skeletons, over the look-alike reading of the same kind (Latin terms only). */
  lookalike: { reading: LookalikeReading; pattern: RegExp } | undefined;
}

interface CompiledTerm extends Matcher {
  concept: SecretConcept;
  language: TermLanguage;
  term: string;
}

export interface SecretTermHit {
  concept: SecretConcept;
  language: TermLanguage;
  /** The table's term, as written there. */
  term: string;
}

// Scripts written without spaces between words: a term in one can only be found inside a run of letters.
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;

function compile(raw: string): Matcher {
  const whole = raw.startsWith('=');
  const body = raw.replace(/^[#=]/, '');
  if (raw.startsWith('#') || UNSPACED.test(body)) {
    const letters = normaliseText(body).compact;
    return {
      readings: ['compact', 'leetCompact'],
      anchor: letters,
      pattern: new RegExp(escape(letters), 'gu'),
      lookalike: LATIN.test(letters)
        ? { reading: 'lookalikeCompact', pattern: new RegExp(spellings(letters), 'gu') }
        : undefined,
    };
  }
  const spelled = body.split(' ').map((word) => {
    const prefix = word.endsWith('*');
    return { text: normaliseText(prefix ? word.slice(0, -1) : word).spaced.trim(), prefix };
  });
  const suffix = (w: { prefix: boolean }) => (w.prefix ? '[\\p{L}\\p{N}\\p{M}]*' : '');
  const within = (source: string) => new RegExp(whole ? `^ ${source} $` : `(?<= )${source}(?= )`, 'gu');
  return {
    readings: ['spaced', 'leetSpaced'],
    anchor: spelled.reduce((a, w) => (w.text.length > a.length ? w.text : a), ''),
    pattern: within(spelled.map((w) => escape(w.text) + suffix(w)).join(' ')),
    lookalike: spelled.every((w) => LATIN.test(w.text))
      ? { reading: 'lookalikeSpaced', pattern: within(spelled.map((w) => spellings(w.text) + suffix(w)).join(' ')) }
      : undefined,
  };
}

const LATIN = /^[a-z0-9 ]+$/;

/**
 * A Latin word as itself or as the skeleton of its small or capital letters, which differ: a
 * look-alike of "PIN" skeletons as "pln" (UTS #39 maps I to l), of "pin" as "pin".
 */
function spellings(word: string): string {
  const forms = new Set([word, skeleton(word), skeleton(word.toUpperCase())]);
  return `(?:${[...forms].map(escape).join('|')})`;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const COMPILED = SECRET_TERMS.map((concept) => ({
  terms: Object.entries(concept.terms).flatMap(([language, terms]) =>
    (terms ?? []).map((term): CompiledTerm => ({
      ...compile(term),
      concept: concept.concept,
      language: language as TermLanguage,
      term,
    })),
  ),
  except: (concept.except ?? []).map(compile),
}));

/**
 * The secret a text names, if any. Of several hits the longest wins (so "client secret" is
 * reported as a client secret, not as a secret), then the table's order.
 */
export function findSecretTerm(text: NormalisedText): SecretTermHit | undefined {
  let best: { hit: SecretTermHit; length: number } | undefined;
  for (const { terms, except } of COMPILED) {
    for (const term of terms) {
      const lengths = term.readings.map((reading) => longestUnexcused(text[reading], term, reading, except));
      const { lookalike } = term;
      // Only when a word was read as a skeleton: otherwise the reading is the plain one again.
      if (lookalike && text.lookalikeSpaced !== text.spaced)
        lengths.push(longestMatch(text[lookalike.reading], lookalike.pattern));
      const length = Math.max(...lengths);
      if (length > (best?.length ?? 0))
        best = { hit: { concept: term.concept, language: term.language, term: term.term }, length };
    }
  }
  return best?.hit;
}

function longestMatch(text: string, pattern: RegExp): number {
  let longest = 0;
  for (const match of text.matchAll(pattern)) longest = Math.max(longest, match[0].length);
  return longest;
}

/** The length of the longest match of `pattern` in `text` that no exception's match covers (0: none). */
function longestUnexcused(text: string, term: Matcher, reading: Reading, except: readonly Matcher[]): number {
  if (!text.includes(term.anchor)) return 0;
  let longest = 0;
  for (const match of text.matchAll(term.pattern)) {
    const start = match.index;
    const end = start + match[0].length;
    const excused = except.some(
      (e) =>
        e.readings.includes(reading) &&
        [...text.matchAll(e.pattern)].some((m) => m.index <= start && m.index + m[0].length >= end),
    );
    if (!excused) longest = Math.max(longest, end - start);
  }
  return longest;
}
