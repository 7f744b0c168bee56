import { InvalidInputError } from '../errors/appError.js';

/**
 * A workspace or note location: a `file:` URI reduced to its canonical form.
 * Containment is decided on these path components, never on strings, so
 * `file:///work/notes-evil` is not inside `file:///work/notes`, and an
 * encoded `%2e%2e` is resolved before anything is compared.
 */
export interface CanonicalUri {
  /** e.g. file:///work/notes/alice */
  uri: string;
  segments: readonly string[];
}

const MAX_LENGTH = 2048;

/** Parses and canonicalises a `file:` URI from outside; throws InvalidInputError on anything odd. */
export function canonicalFileUri(input: string, what = 'workspaceUri'): CanonicalUri {
  const fail = (why: string): never => {
    throw new InvalidInputError(
      `${what} ${why}. Use a file URI such as file:///work/notes/alice (see notes_workspaces).`,
    );
  };
  if (input.length === 0 || input.length > MAX_LENGTH) fail('must be 1 to 2048 characters');
  if (/[\p{Cc}\\]/u.test(input)) fail('contains a control character or a backslash');
  const match = /^file:\/\/([^/?#]*)(\/[^?#]*)?$/i.exec(input);
  if (!match) fail('must be a file: URI with an absolute path and no query or fragment');
  const host = match?.[1] ?? '';
  if (host !== '' && host.toLowerCase() !== 'localhost') fail('must not name a host');
  const segments: string[] = [];
  for (const raw of (match?.[2] ?? '/').split('/').slice(1)) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return fail('has a malformed percent-encoding');
    }
    // An encoded separator or NUL would smuggle structure past the component comparison.
    if (segment.includes('/') || segment.includes('\\') || segment.includes('\u0000')) fail('encodes a path separator');
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (segments.length === 0) fail('climbs above the root');
      segments.pop();
      continue;
    }
    segments.push(segment);
  }
  if (segments.length === 0) fail('must not be the file system root');
  return { uri: `file:///${segments.map(encodeSegment).join('/')}`, segments };
}

/** True when `inner` is `outer` or lies below it, compared component by component. */
export function isWithin(inner: CanonicalUri, outer: CanonicalUri): boolean {
  return outer.segments.length <= inner.segments.length && outer.segments.every((s, i) => inner.segments[i] === s);
}

export function childUri(parent: CanonicalUri, name: string): CanonicalUri {
  const segments = [...parent.segments, name];
  return { uri: `file:///${segments.map(encodeSegment).join('/')}`, segments };
}

function encodeSegment(segment: string): string {
  return encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
