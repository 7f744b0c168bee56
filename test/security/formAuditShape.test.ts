import { describe, expect, it } from 'vitest';
import { checkShape } from '../../src/security/formAuditShape.js';

const form = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  ...extra,
});
const rules = (schema: unknown) => checkShape(schema).findings.map((f) => f.rule);

// One schema of each PrimitiveSchemaDefinition of MCP 2026-07-28 (schema.ts): all inside the subset.
const EVERY_PRIMITIVE = form(
  {
    name: { type: 'string', title: 'Name', description: 'Your name', minLength: 1, maxLength: 80, default: '' },
    email: { type: 'string', format: 'email' },
    site: { type: 'string', format: 'uri' },
    day: { type: 'string', format: 'date' },
    at: { type: 'string', format: 'date-time' },
    guests: { type: 'integer', minimum: 1, maximum: 12, default: 2 },
    ratio: { type: 'number', minimum: 0, maximum: 1.5 },
    ok: { type: 'boolean', default: false },
    color: { type: 'string', enum: ['red', 'green'], default: 'red' },
    legacy: { type: 'string', enum: ['a', 'b'], enumNames: ['A', 'B'] },
    titled: { type: 'string', oneOf: [{ const: 'a', title: 'A' }] },
    tags: { type: 'array', items: { type: 'string', enum: ['x', 'y'] }, minItems: 1, maxItems: 2, default: ['x'] },
    titledTags: { type: 'array', items: { anyOf: [{ const: 'x', title: 'X' }] } },
  },
  { $schema: 'https://json-schema.org/draft/2020-12/schema', required: ['name', 'email'] },
);

describe('the flat primitive subset of requestedSchema', () => {
  it('admits every primitive the spec defines', () => {
    expect(checkShape(EVERY_PRIMITIVE).findings).toEqual([]);
    expect(checkShape(form({})).findings).toEqual([]);
  });

  it('tolerates the annotations servers add that change nothing a user enters (a model title, no extra properties)', () => {
    expect(rules(form({}, { title: 'Booking', description: 'd', additionalProperties: false }))).toEqual([]);
    expect(rules(form({}, { additionalProperties: true }))).toEqual(['bad_value']);
  });

  it.each([
    ['null', null],
    ['an array', []],
    ['a string', 'object'],
    ['no type', { properties: {} }],
    ['another type', { type: 'array', properties: {} }],
    ['no properties', { type: 'object' }],
    ['properties that are a list', { type: 'object', properties: [] }],
  ])('refuses %s as not an object schema', (_name, schema) => {
    expect(rules(schema)).toEqual(['not_object']);
  });

  it('refuses nested objects, typed or not', () => {
    expect(rules(form({ address: { type: 'object', properties: { city: { type: 'string' } } } }))).toEqual([
      'nested_object',
    ]);
    expect(rules(form({ address: { properties: {} } }))).toEqual(['nested_object']);
  });

  it.each([
    ['free text items', { type: 'array', items: { type: 'string' } }],
    ['object items', { type: 'array', items: { type: 'object', properties: {} } }],
    ['no items', { type: 'array' }],
    ['an extra keyword in items', { type: 'array', items: { type: 'string', enum: ['a'], pattern: '.' } }],
    ['an empty choice', { type: 'array', items: { type: 'string', enum: [] } }],
  ])('refuses an array of %s', (_name, property) => {
    expect(rules(form({ list: property }))).toEqual(['array_not_enum']);
  });

  it.each([
    ['no type', { title: 'x' }],
    ['type null', { type: 'null' }],
    ['a list of types', { type: ['string', 'null'] }],
    ['a reference', { $ref: '#/$defs/x' }],
    ['a composition', { anyOf: [{ type: 'string' }, { type: 'null' }] }],
    ['a boolean schema', true],
  ])('refuses a property with %s as not primitive', (_name, property) => {
    expect(rules(form({ x: property }))).toEqual(['not_primitive']);
  });

  it.each([
    ['writeOnly', { type: 'string', writeOnly: true }],
    ['pattern', { type: 'string', pattern: '^\\d+$' }],
    ['an x- hint', { type: 'string', 'x-sensitive': true }],
    ['const', { type: 'string', const: 'a' }],
    ['a string keyword on a number', { type: 'integer', maxLength: 4 }],
    ['format on a number', { type: 'number', format: 'password' }],
    ['enumNames on a titled choice', { type: 'string', oneOf: [{ const: 'a', title: 'A' }], enumNames: ['A'] }],
  ])('refuses %s as a keyword outside the subset', (_name, property) => {
    expect(checkShape(form({ x: property })).findings).toEqual([
      expect.objectContaining({ rule: 'unknown_keyword', field: 'x' }),
    ]);
  });

  it('refuses an unknown keyword at the top level', () => {
    expect(checkShape(form({}, { $defs: {} })).findings).toEqual([{ rule: 'unknown_keyword', keyword: '$defs' }]);
  });

  it('refuses format password as a secret, and other formats as outside the subset', () => {
    expect(checkShape(form({ x: { type: 'string', format: 'password' } })).findings).toEqual([
      { rule: 'format_password', field: 'x', keyword: 'format' },
    ]);
    for (const format of ['uuid', 'regex', 'ipv4', 'PASSWORD'])
      expect(rules(form({ x: { type: 'string', format } }))).toEqual(['format_not_allowed']);
  });

  it.each([
    ['a title that is not text', { type: 'string', title: 5 }, 'title'],
    ['a negative minLength', { type: 'string', minLength: -1 }, 'minLength'],
    ['a fractional maxLength', { type: 'string', maxLength: 1.5 }, 'maxLength'],
    ['a default of another type', { type: 'boolean', default: 'yes' }, 'default'],
    ['an infinite minimum', { type: 'number', minimum: Number.POSITIVE_INFINITY }, 'minimum'],
    ['a choice of numbers', { type: 'string', enum: [1, 2] }, 'enum'],
    ['enumNames of another length', { type: 'string', enum: ['a', 'b'], enumNames: ['A'] }, 'enumNames'],
    [
      'an option with more than const and title',
      { type: 'string', oneOf: [{ const: 'a', title: 'A', x: 1 }] },
      'oneOf',
    ],
    [
      'a multi-select default that is not a list',
      { type: 'array', items: { type: 'string', enum: ['a'] }, default: 'a' },
      'default',
    ],
  ])('refuses %s as a bad value', (_name, property, keyword) => {
    expect(checkShape(form({ x: property })).findings).toEqual([{ rule: 'bad_value', field: 'x', keyword }]);
  });

  it('refuses a required list that names a missing field, repeats one, or is not a list of names', () => {
    for (const required of [['nope'], ['a', 'a'], 'a', [1]])
      expect(checkShape(form({ a: { type: 'string' } }, { required })).findings).toEqual([
        { rule: 'bad_value', keyword: 'required' },
      ]);
  });

  it('lists every problem, not the first one only, and hands each field on for the word rules', () => {
    const { findings, fields } = checkShape(
      form({ a: { type: 'object' }, b: { type: 'string', pattern: 'x' }, c: { type: 'boolean', title: 'C' } }),
    );
    expect(findings.map((f) => [f.rule, f.field])).toEqual([
      ['nested_object', 'a'],
      ['unknown_keyword', 'b'],
    ]);
    expect(fields).toEqual([
      { field: 'a', kind: undefined },
      { field: 'b', kind: 'text' },
      { field: 'c', kind: 'boolean', title: 'C' },
    ]);
  });
});
