import { describe, expect, it } from 'vitest';
import { translateInputSchema } from '../../../src/mcp/declared/inputSchema.js';
import { restrictedProperty, type Place } from '../../../src/mcp/declared/openapiSchema.js';

// Each translated property must be one the loader's restricted schema accepts, so it is checked there too.
function imported(schema: unknown, place: Place = 'query', description?: string) {
  const result = restrictedProperty('p', schema, place, description);
  if ('skipped' in result) throw new Error(`skipped: ${result.skipped}`);
  const loaded = translateInputSchema({
    type: 'object',
    additionalProperties: false,
    properties: { p: result.property },
  });
  expect(loaded.problems).toEqual([]);
  return result;
}

const skipped = (schema: unknown) => {
  const result = restrictedProperty('p', schema, 'body');
  return 'skipped' in result ? result.skipped : undefined;
};

describe('restrictedProperty', () => {
  it('bounds a string the description leaves unbounded, by where it goes, and says so', () => {
    expect(imported({ type: 'string' }, 'path')).toEqual({
      property: { type: 'string', maxLength: 1000 },
      notes: [],
      added: [{ bound: 'maxLength 1000', name: 'p' }],
    });
    expect(imported({ type: 'string' }, 'body').property).toEqual({ type: 'string', maxLength: 65536 });
    expect(imported({ type: 'string', minLength: 2, maxLength: 39, pattern: '^[a-z]+$' }).property).toEqual({
      type: 'string',
      minLength: 2,
      maxLength: 39,
      pattern: '^[a-z]+$',
    });
  });

  it('keeps a string enum, leaving out null (3.0 nullable and 3.1 type lists alike)', () => {
    expect(imported({ type: 'string', enum: ['open', 'closed', null], nullable: true }).property).toEqual({
      type: 'string',
      enum: ['open', 'closed'],
    });
    expect(imported({ type: ['string', 'null'], maxLength: 5 }).property).toEqual({ type: 'string', maxLength: 5 });
    expect(imported({ const: 'only' }).property).toEqual({ type: 'string', enum: ['only'] });
  });

  it("puts the provider's default and a numeric enum in the description, since the tool sends neither", () => {
    const result = imported({ type: 'integer', enum: [10, 20], default: 10 }, 'query', 'Page size.');
    expect(result.property).toEqual({ type: 'integer', description: 'Page size. One of: 10, 20. Default: 10.' });
    expect(result.notes).toEqual(['p: enum [10,20] is not checked on an integer (listed in its description)']);
  });

  it('turns exclusive bounds into inclusive ones for integers (3.0 booleans and 3.1 numbers)', () => {
    expect(imported({ type: 'integer', minimum: 0, exclusiveMinimum: true, maximum: 10 }).property).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 10,
    });
    expect(imported({ type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 100 }).property).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 99,
    });
    const number = imported({ type: 'number', exclusiveMinimum: 0 });
    expect(number.property).toEqual({ type: 'number', minimum: 0 });
    expect(number.notes).toEqual(['p: exclusiveMinimum 0 kept as minimum 0 (inclusive)']);
  });

  it('notes the constraints it cannot check (format, multipleOf, an invalid pattern), but not int64', () => {
    expect(imported({ type: 'string', format: 'date-time', maxLength: 30 }).notes).toEqual([
      'p: format "date-time" is not checked (the provider checks it)',
    ]);
    expect(imported({ type: 'integer', format: 'int64', multipleOf: 5 }).notes).toEqual([
      'p: multipleOf 5 is not checked (the provider checks it)',
    ]);
    const pattern = imported({ type: 'string', maxLength: 9, pattern: '(?<=a)\\' });
    expect(pattern.property).toEqual({ type: 'string', maxLength: 9 });
    expect(pattern.notes[0]).toMatch(/^p: pattern .* left out/);
  });

  it('bounds an array and its items', () => {
    const result = imported({ type: 'array', items: { type: 'string' } }, 'body');
    expect(result.property).toEqual({ type: 'array', items: { type: 'string', maxLength: 65536 }, maxItems: 100 });
    expect(result.added).toEqual([
      { bound: 'maxLength 65536', name: 'p items' },
      { bound: 'maxItems 100', name: 'p' },
    ]);
  });

  it('imports a oneOf or anyOf as its first choice the restricted schema can express, and says so', () => {
    const title = imported({ oneOf: [{ type: 'string' }, { type: 'integer' }], description: 'The title.' }, 'body');
    expect(title.property).toEqual({ type: 'string', maxLength: 65536, description: 'The title.' });
    expect(title.notes).toEqual(['p: oneOf of 2: imported as its string choice only']);
    expect(imported({ anyOf: [{ type: 'object', properties: {} }, { type: 'boolean' }] }).property).toEqual({
      type: 'boolean',
    });
  });

  it('skips what the restricted schema cannot express, saying why', () => {
    expect(skipped({ type: 'object', properties: { a: { type: 'string' } } })).toBe('a nested object');
    expect(skipped({ type: 'array', items: { type: 'object', properties: {} } })).toBe('an array of a nested object');
    expect(skipped({ type: 'array', items: { type: 'array', items: { type: 'string' } } })).toBe('an array of arrays');
    expect(skipped({ oneOf: [{ type: 'object' }, { type: 'array', items: { type: 'object' } }] })).toBe(
      'oneOf with no choice the restricted inputSchema can express (a nested object; an array of a nested object)',
    );
    expect(skipped({ allOf: [{ type: 'string' }, { maxLength: 3 }] })).toBe('allOf (a combination of schemas)');
    expect(skipped({ type: 'string', not: { enum: ['x'] } })).toBe('not (a condition on the value)');
    expect(skipped({ description: 'anything' })).toBe('no type');
    expect(skipped({ type: 'string', enum: [1, 'a'] })).toBe(
      'an enum the restricted inputSchema cannot express (values that are not short strings)',
    );
    expect(skipped({ type: 'string', contains: {} })).toBe(
      '"contains", which the restricted inputSchema cannot express',
    );
  });

  it('merges a single-member allOf', () => {
    expect(imported({ allOf: [{ type: 'string', maxLength: 4 }], description: 'Four.' }).property).toEqual({
      type: 'string',
      maxLength: 4,
      description: 'Four.',
    });
  });
});
