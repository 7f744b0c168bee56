import { createRequire } from 'node:module';

// UTS #39 §4 skeletons, from Unicode's confusables.txt as the unhomoglyph
// package ships it (one prototype per source code point). Two strings whose
// skeletons are equal look alike. For domain names, which are compared
// caseless and whose diacritics a reader skims over, the skeleton is also
// lowercased and stripped of non-spacing marks, as Chromium's lookalike check
// does (components/url_formatter/spoof_checks/idn_spoof_checker.cc).

// The package is CommonJS JSON; createRequire reads it synchronously once.
const PROTOTYPES = new Map(
  Object.entries(createRequire(import.meta.url)('unhomoglyph/data.json') as Record<string, string>),
);
const IGNORABLE = /[\p{Default_Ignorable_Code_Point}\p{Mn}]/gu;

// The ASCII range is the hot path (most hosts): its skeleton is a table lookup.
const ASCII_SKELETON = Array.from({ length: 128 }, (_, code) => {
  const ch = String.fromCharCode(code);
  return (PROTOTYPES.get(ch) ?? ch).toLowerCase();
});

/** The skeleton of a host, a label or any text: equal skeletons mean the texts look alike. */
export function skeleton(text: string): string {
  if (isAscii(text)) {
    let out = '';
    for (let i = 0; i < text.length; i++) out += ASCII_SKELETON[text.charCodeAt(i)]!;
    return out;
  }
  let out = '';
  for (const ch of text.normalize('NFD')) out += PROTOTYPES.get(ch) ?? ch;
  return out.normalize('NFD').replace(IGNORABLE, '').toLowerCase();
}

/** The prototype of one character (itself when confusables.txt lists none). */
export function prototypeOf(ch: string): string {
  return PROTOTYPES.get(ch) ?? ch;
}

export function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}
