import { describe, expect, it } from 'vitest';
import { canonicalFileUri, childUri, isWithin } from '../../src/notes/workspaceUri.js';

const notes = canonicalFileUri('file:///work/notes');

describe('canonicalFileUri and isWithin', () => {
  it('keeps a plain workspace URI as it is', () => {
    expect(canonicalFileUri('file:///work/notes/alice').uri).toBe('file:///work/notes/alice');
    expect(canonicalFileUri('file://localhost/work/notes/').uri).toBe('file:///work/notes');
  });

  it('does not treat a string prefix as containment: file:///work/notes-evil is outside file:///work/notes', () => {
    expect(isWithin(canonicalFileUri('file:///work/notes-evil/secret.md'), notes)).toBe(false);
  });

  it('resolves an encoded traversal before comparing: …/notes/%2e%2e/private.md is outside', () => {
    const target = canonicalFileUri('file:///work/notes/%2e%2e/private.md');
    expect(target.uri).toBe('file:///work/private.md');
    expect(isWithin(target, notes)).toBe(false);
    expect(isWithin(canonicalFileUri('file:///work/notes/%2E%2E/notes/x'), notes)).toBe(true);
  });

  it('accepts the workspace itself and anything below it', () => {
    expect(isWithin(notes, notes)).toBe(true);
    expect(isWithin(canonicalFileUri('file:///work/notes/a/b.md'), notes)).toBe(true);
    expect(isWithin(childUri(notes, 'note_1.md'), notes)).toBe(true);
  });

  it('decodes percent-encoding, so an encoded name is the same place', () => {
    expect(canonicalFileUri('file:///work/n%6Ftes/alice').uri).toBe('file:///work/notes/alice');
    expect(canonicalFileUri('file:///work/my%20notes').segments).toEqual(['work', 'my notes']);
  });

  it.each([
    ['http://example.com/work/notes', 'must be a file: URI'],
    ['file://evil.example/work/notes', 'must not name a host'],
    ['file:///work/notes?x=1', 'no query or fragment'],
    ['file:///work/notes#frag', 'no query or fragment'],
    ['file:///work/notes%2F..%2Fbob', 'encodes a path separator'],
    ['file:///work/notes%5C..', 'encodes a path separator'],
    ['file:///work/%zz', 'malformed percent-encoding'],
    ['file:///../etc', 'climbs above the root'],
    ['file:///', 'must not be the file system root'],
    ['file:///work\\notes', 'backslash'],
    ['', 'must be 1 to 2048 characters'],
  ])('refuses %j', (input, message) => {
    expect(() => canonicalFileUri(input)).toThrow(message);
  });
});
