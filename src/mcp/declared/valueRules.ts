import { isAscii, prototypeOf } from '../../security/confusables.js';
import type { ValueCheck } from './inputSchema.js';

// What an argument may hold for where a declared tool puts it. The host of
// every request is the connection's API base (connectionFetch.ts); these rules
// keep an argument from changing the path below it, or the request's headers.
// They run when arguments are parsed (before a connection is asked for, or
// anything sent) and again when the request is built.

export type Use = 'path' | 'query' | 'header' | 'body';

/** Longest text one path variable may expand to (a segment, not a document). */
export const MAX_PATH_VALUE = 1_000;

const PERCENT_ENCODED = /%[0-9a-f]{2}/i;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** C0 controls and DEL (CR, LF and NUL among them). */
export function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** An argument's text in a template: lists as RFC 6570 simple expansion writes them, comma-separated. */
export function textOf(value: unknown): string {
  if (Array.isArray(value)) return value.map(textOf).join(',');
  return typeof value === 'string' ? value : String(value);
}

/**
 * Why `text` may not be one path variable, or undefined. It is encoded with
 * encodeURIComponent after this, but a value that means "another segment",
 * "the parent", "another host" or "already encoded" is refused outright: some
 * servers and proxies decode twice, or normalise before they route (RFC 3986
 * §3.2, §5.2.4).
 */
export function pathValueProblem(text: string): string | undefined {
  if (text === '') return 'must not be empty in a path';
  if (text.length > MAX_PATH_VALUE) return `must be at most ${MAX_PATH_VALUE} characters in a path`;
  const problem = segmentProblem(text);
  if (problem || isAscii(text)) return problem;
  // A provider or proxy that normalises Unicode reads U+FF0E U+FF0E as "..", U+FF0F as "/" (NFKC,
  // UAX #15), and some read U+2215 or U+2044 as "/" (UTS #39 confusables): the rules hold on that reading too.
  const read = readAs(text);
  return read === text ? undefined : withNote(segmentProblem(read));
}

const STRUCTURE = new Set(['.', '/', '\\', '%']);

/** The text NFKC-normalised, each character that looks like ".", "/", "\\" or "%" replaced by it. */
function readAs(text: string): string {
  let out = '';
  for (const ch of text.normalize('NFKC')) out += STRUCTURE.has(prototypeOf(ch)) ? prototypeOf(ch) : ch;
  return out;
}

const withNote = (problem: string | undefined) =>
  problem && `${problem}, after Unicode normalisation (NFKC) and look-alikes of ".", "/" and "\\"`;

function segmentProblem(text: string): string | undefined {
  if (hasControl(text)) return 'must not contain control characters (CR, LF, NUL, …)';
  if (text.includes('/') || text.includes('\\')) return 'must not contain "/" or "\\" (one path segment)';
  if (text === '.' || text.includes('..')) return 'must not be "." or contain ".."';
  if (PERCENT_ENCODED.test(text)) return 'must not contain percent-encoded characters (%xx)';
  if (SCHEME.test(text)) return 'must not start with a scheme ("x:")';
  if (text.includes('@')) return 'must not contain "@"';
  return undefined;
}

/** Why `text` may not be a header value (RFC 9110 §5.5: no CR, LF or NUL; no other controls either). */
export function headerValueProblem(text: string): string | undefined {
  return hasControl(text) ? 'must not contain control characters (CR, LF, NUL, …) in a header' : undefined;
}

/**
 * Why `text` may not be a query value. URLSearchParams encodes everything,
 * but the bound fetch refuses an encoded "\" or control character anywhere in
 * the URL it is given, so those are refused here with a clear message.
 */
export function queryValueProblem(text: string): string | undefined {
  return hasControl(text) || text.includes('\\')
    ? 'must not contain control characters or "\\" in a query parameter'
    : undefined;
}

const RULES: Record<Exclude<Use, 'body'>, (text: string) => string | undefined> = {
  path: pathValueProblem,
  header: headerValueProblem,
  query: queryValueProblem,
};

/** The first rule `value` breaks among those of its uses, or undefined. */
export function valueProblem(value: unknown, uses: ReadonlySet<Use>): string | undefined {
  const texts = Array.isArray(value) ? [textOf(value), ...value.map(textOf)] : [textOf(value)];
  for (const use of uses) {
    if (use === 'body') continue;
    for (const text of texts) {
      const problem = RULES[use](text);
      if (problem) return problem;
    }
  }
  return undefined;
}

/** The argument check for a property with these uses (none for a property only in the body). */
export function checkForUses(uses: ReadonlySet<Use> | undefined): ValueCheck | undefined {
  if (!uses || [...uses].every((u) => u === 'body')) return undefined;
  return (value, ctx) => {
    const problem = valueProblem(value, uses);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  };
}
