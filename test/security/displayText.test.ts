import { describe, expect, it } from 'vitest';
import { displayParts, INVISIBLE, plainText, quoteForeign } from '../../src/security/displayText.js';

const BIDI = [
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200e',
  '\u200f',
  '\u061c',
];
const HIDDEN = [
  '\u200b',
  '\u200c',
  '\u200d',
  '\u2060',
  '\u00ad',
  '\ufeff',
  '\u180e',
  '\u034f',
  '\u3164',
  '\u115f',
  '\ufe0f',
  '\u{e0041}',
  '\u{e007f}',
];

describe('display text from someone else', () => {
  it.each(
    [...BIDI, ...HIDDEN].map((ch) => [`U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`, ch]),
  )('counts %s as invisible and removes it', (_name, ch) => {
    expect(INVISIBLE.test(ch)).toBe(true);
    expect(plainText(`pay${ch}roll`)).toBe('payroll');
  });

  it('keeps visible text of any script, and turns controls and line breaks into single spaces', () => {
    expect(plainText('  Q3\tрезультаты\n\nتقرير\u2028x\u0007 ')).toBe('Q3 результаты تقرير x');
    expect(INVISIBLE.test('Report “Q3” é 日本 😀')).toBe(false);
  });

  it('quotes the text in curly quotes it cannot contain, cut at whole characters', () => {
    expect(quoteForeign('say \u201cyes\u201d\u202e', 80)).toBe('\u201csay "yes"\u201d');
    expect(quoteForeign(`${'😀'.repeat(10)}`, 5)).toBe('\u201c😀😀😀😀…\u201d');
    expect(quoteForeign('short', 5)).toBe('\u201cshort\u201d');
  });

  it('splits a sentence into our words and the quoted ones, made plain again', () => {
    expect(displayParts(`create the report ${quoteForeign('Q3 \u202eevil', 80)} today`)).toEqual([
      { text: 'create the report', foreign: false },
      { text: 'Q3 evil', foreign: true },
      { text: 'today', foreign: false },
    ]);
    // A purpose stored before quoting: one part of our words, still made plain.
    expect(displayParts('create the report "Old\u202e one"')).toEqual([
      { text: 'create the report "Old one"', foreign: false },
    ]);
    expect(displayParts(`create the report ${quoteForeign('   ', 80)}`)).toEqual([
      { text: 'create the report', foreign: false },
      { text: '', foreign: true },
    ]);
  });
});
