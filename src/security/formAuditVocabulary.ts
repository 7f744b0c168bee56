import { SECRET_TERMS, type SecretConcept, type TermLanguage } from './formAuditTerms.js';
import { normaliseText, type NormalisedText } from './formAuditText.js';

// formAuditTerms.ts's table compiled once into regular expressions over the
// readings of a normalised text (spaced words and compact letters, each also in leet).

type Reading = 'spaced' | 'compact' | 'leetSpaced' | 'leetCompact';

interface Matcher {
  readings: readonly Reading[];
  /** Letters every match contains: a text without them is passed over without running the pattern. */
  anchor: string;
  pattern: RegExp;
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
    return { readings: ['compact', 'leetCompact'], anchor: letters, pattern: new RegExp(escape(letters), 'gu') };
  }
  const spelled = body.split(' ').map((word) => {
    const prefix = word.endsWith('*');
    return { text: normaliseText(prefix ? word.slice(0, -1) : word).spaced.trim(), prefix };
  });
  const source = spelled.map((w) => escape(w.text) + (w.prefix ? '[\\p{L}\\p{N}\\p{M}]*' : '')).join(' ');
  return {
    readings: ['spaced', 'leetSpaced'],
    anchor: spelled.reduce((a, w) => (w.text.length > a.length ? w.text : a), ''),
    pattern: new RegExp(whole ? `^ ${source} $` : `(?<= )${source}(?= )`, 'gu'),
  };
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
      for (const reading of term.readings) {
        const length = longestUnexcused(text[reading], term, reading, except);
        if (length > (best?.length ?? 0))
          best = { hit: { concept: term.concept, language: term.language, term: term.term }, length };
      }
    }
  }
  return best?.hit;
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
