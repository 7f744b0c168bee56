import { RE2JS } from 're2js';

// A regular expression the code did not write (an upstream's outputSchema, an operator's TOOLS_FILE
// or OpenAPI import) runs on RE2's engine, whose time is linear in the text: V8's backtracking
// engine takes time exponential in the text for patterns such as ^(a+)+$, on the one thread every
// user shares. RE2 has no lookaround and no backreferences (the constructs that need backtracking),
// so a pattern using them is refused, never run another way.

export const MAX_PATTERN_LENGTH = 1_000;

/** What a pattern from outside the code must be, for error messages. */
export const SAFE_PATTERN_RULE =
  'an ECMA-262 regular expression RE2 can run (no lookaround, no backreferences), at most 1000 characters';

/** A compiled pattern: `test` searches as RegExp.prototype.test does, in time linear in the text. */
export interface SafePattern {
  readonly source: string;
  test(text: string): boolean;
  toString(): string;
}

export class UnsafePatternError extends Error {
  override name = 'UnsafePatternError';
}

/** The pattern compiled for RE2, or UnsafePatternError saying why it cannot be. `unicode`: ECMA-262's `u` flag. */
export function safePattern(source: string, unicode = true): SafePattern {
  if (source.length > MAX_PATTERN_LENGTH)
    throw new UnsafePatternError(`the pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
  try {
    // The ECMA-262 reading is the one schemas mean: a pattern it refuses is refused here too.
    new RegExp(source, unicode ? 'u' : '');
  } catch (err) {
    throw new UnsafePatternError(`not an ECMA-262 regular expression (${(err as Error).message})`);
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(source));
  } catch (err) {
    throw new UnsafePatternError(`RE2 cannot run it: ${(err as Error).message}`);
  }
  const text = `/${source}/${unicode ? 'u' : ''}`;
  return { source, test: (input) => re.test(input), toString: () => text };
}

/** Why `source` cannot be run safely, or undefined when it can. */
export function patternProblem(source: string): string | undefined {
  try {
    safePattern(source);
    return undefined;
  } catch (err) {
    if (err instanceof UnsafePatternError) return err.message;
    throw err;
  }
}
