// Text that reaches a person from someone else (a model's arguments, a URL)
// must read as what it is. Bidirectional controls reorder what follows them
// (CVE-2021-42574, "Trojan Source"); zero-width and other default-ignorable
// code points hide text or make two strings look alike (Unicode TR #36 §2).

/** Invisible characters: every default-ignorable code point and every format character (bidi controls included). */
export const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/u;

const INVISIBLE_RUN = /[\p{Default_Ignorable_Code_Point}\p{Cf}]+/gu;
const BREAKS = /[\p{Cc}\u2028\u2029\s]+/gu;
const OPEN = '\u201c';
const CLOSE = '\u201d';
const QUOTED = /\u201c([^\u201c\u201d]*)\u201d/gu;

/** One line of plain text: invisible characters removed, controls and line breaks made single spaces. */
export function plainText(text: string): string {
  return text.replace(INVISIBLE_RUN, '').replace(BREAKS, ' ').trim();
}

/**
 * Text chosen by someone else (a model), made safe to show in our own
 * wording: plain, at most `maxChars` characters (whole code points), and set in
 * curly quotes that it cannot itself contain, so displayParts() can always
 * tell it from the words around it.
 */
export function quoteForeign(text: string, maxChars: number): string {
  const chars = [...plainText(text).replace(/[\u201c\u201d]/gu, '"')];
  const shown =
    chars.length > maxChars
      ? `${chars
          .slice(0, maxChars - 1)
          .join('')
          .trimEnd()}…`
      : chars.join('');
  return `${OPEN}${shown}${CLOSE}`;
}

export interface DisplayPart {
  text: string;
  /** True for text quoted by quoteForeign(): someone else's words, to be shown apart from ours. */
  foreign: boolean;
}

/** A sentence built with quoteForeign(), split into our words and the quoted ones (each made plain again). */
export function displayParts(sentence: string): DisplayPart[] {
  const parts: DisplayPart[] = [];
  let at = 0;
  for (const match of sentence.matchAll(QUOTED)) {
    if (match.index > at) parts.push({ text: plainText(sentence.slice(at, match.index)), foreign: false });
    parts.push({ text: plainText(match[1] ?? ''), foreign: true });
    at = match.index + match[0].length;
  }
  if (at < sentence.length) parts.push({ text: plainText(sentence.slice(at)), foreign: false });
  return parts.filter((p) => p.foreign || p.text !== '');
}
