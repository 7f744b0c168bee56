import { wholeScriptOf } from './mixedScript.js';

// Whether a top-level domain is at home with a label's script: one written
// in that script (рф for Cyrillic), or a country code whose country writes in
// it by CLDR's likely subtags, as the ICU in node:Intl ships them (gr:
// Greek, ua: Cyrillic, il: Hebrew). A whole-script lookalike is a national
// name there (αθήνα.gr), and a disguise under com.

const byCode = new Map<string, RegExp | null>();

/** A label written wholly in the script (ISO 15924 code) with Common and Inherited characters, or null if the engine has no such script. */
function scriptPattern(code: string): RegExp | null {
  let pattern = byCode.get(code);
  if (pattern === undefined) {
    try {
      pattern = new RegExp(`^[\\p{scx=${code}}\\p{scx=Zyyy}\\p{scx=Zinh}]+$`, 'u');
    } catch {
      // Jpan, Kore, Hans, Hant name writing systems, not Unicode scripts.
      pattern = null;
    }
    byCode.set(code, pattern);
  }
  return pattern;
}

const countryScripts = new Map<string, string | undefined>();

/** The script a country writes in (ISO 15924), by CLDR's likely subtags; looked up once per country code. */
function countryScriptOf(cc: string): string | undefined {
  if (!countryScripts.has(cc)) {
    let code: string | undefined;
    try {
      code = new Intl.Locale(`und-${cc.toUpperCase()}`).maximize().script;
    } catch {
      code = undefined;
    }
    countryScripts.set(cc, code);
  }
  return countryScripts.get(cc);
}

export function tldSuitsLabel(tld: string, label: string): boolean {
  if (!/^[a-z]{2}$/.test(tld)) return tld !== '' && wholeScriptOf(tld) === wholeScriptOf(label);
  const code = countryScriptOf(tld);
  return code !== undefined && scriptPattern(code)?.test(label) === true;
}
