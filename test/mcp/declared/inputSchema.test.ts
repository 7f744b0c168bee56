import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { translateInputSchema } from '../../../src/mcp/declared/inputSchema.js';

const root = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  additionalProperties: false,
  required,
  properties,
});

function schemaOf(json: unknown): z.ZodObject {
  const translated = translateInputSchema(json);
  if (!translated.input) throw new Error(`refused: ${translated.problems.join('; ')}`);
  return translated.input.schema;
}

function problemsOf(json: unknown): string[] {
  return translateInputSchema(json).problems;
}

describe('the restricted input schema, as the zod object a declared tool runs on', () => {
  const schema = schemaOf(
    root(
      {
        owner: { type: 'string', minLength: 1, maxLength: 39, pattern: '^[a-z0-9-]+$', description: 'The owner' },
        state: { type: 'string', enum: ['open', 'closed'], default: 'open' },
        number: { type: 'integer', minimum: 1, maximum: 1000 },
        ratio: { type: 'number', minimum: 0, maximum: 1 },
        draft: { type: 'boolean', default: false },
        labels: { type: 'array', items: { type: 'string', maxLength: 20 }, maxItems: 3 },
      },
      ['owner', 'number'],
    ),
  );

  it('accepts arguments within every bound, and fills the defaults', () => {
    expect(schema.parse({ owner: 'alice', number: 7 })).toEqual({
      owner: 'alice',
      number: 7,
      state: 'open',
      draft: false,
    });
    expect(
      schema.parse({ owner: 'a-1', number: 1000, ratio: 0.5, state: 'closed', draft: true, labels: ['bug', 'ui'] }),
    ).toMatchObject({ ratio: 0.5, labels: ['bug', 'ui'] });
  });

  it.each([
    ['a missing required property', { number: 7 }],
    ['an unknown property (additionalProperties: false)', { owner: 'alice', number: 7, extra: 1 }],
    ['a string over maxLength', { owner: 'a'.repeat(40), number: 7 }],
    ['a string under minLength', { owner: '', number: 7 }],
    ['a string against the pattern', { owner: 'Alice!', number: 7 }],
    ['a value outside the enum', { owner: 'alice', number: 7, state: 'merged' }],
    ['a fraction for an integer', { owner: 'alice', number: 1.5 }],
    ['an integer over maximum', { owner: 'alice', number: 1001 }],
    ['a number under minimum', { owner: 'alice', number: 7, ratio: -0.1 }],
    ['a string for a boolean', { owner: 'alice', number: 7, draft: 'yes' }],
    ['more items than maxItems', { owner: 'alice', number: 7, labels: ['a', 'b', 'c', 'd'] }],
    ['an item over its maxLength', { owner: 'alice', number: 7, labels: ['x'.repeat(21)] }],
    ['a 2 MB string', { owner: 'a'.repeat(2 * 1024 * 1024), number: 7 }],
  ])('refuses %s', (_what, args) => {
    expect(schema.safeParse(args).success).toBe(false);
  });

  it('shows tools/list a JSON Schema with the same bounds', () => {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12' });
    expect(json).toMatchObject({
      type: 'object',
      additionalProperties: false,
      properties: {
        owner: { type: 'string', minLength: 1, maxLength: 39, pattern: '^[a-z0-9-]+$', description: 'The owner' },
        state: { type: 'string', enum: ['open', 'closed'], default: 'open' },
        number: { type: 'integer', minimum: 1, maximum: 1000 },
        labels: { type: 'array', maxItems: 3, items: { type: 'string', maxLength: 20 } },
      },
    });
  });

  it('runs a use check on the property and on its default', () => {
    const noSlash = (value: unknown, ctx: z.RefinementCtx) => {
      if (String(value).includes('/')) ctx.addIssue({ code: 'custom', message: 'must not contain "/"' });
    };
    const checked = translateInputSchema(root({ repo: { type: 'string', maxLength: 100 } }, ['repo']), (name) =>
      name === 'repo' ? noSlash : undefined,
    );
    expect(checked.input?.schema.safeParse({ repo: 'a/b' }).error?.issues[0]).toMatchObject({
      path: ['repo'],
      message: 'must not contain "/"',
    });
    expect(
      translateInputSchema(root({ repo: { type: 'string', maxLength: 100, default: 'a/b' } }), () => noSlash).problems,
    ).toEqual(['inputSchema.properties.repo.default: does not fit the property (must not contain "/")']);
  });
});

describe('every schema feature outside the restricted set is a problem naming its path', () => {
  it.each([
    ['a root that is not an object schema', { type: 'array' }, 'inputSchema.type: must be "object"'],
    [
      'a root without additionalProperties: false',
      { type: 'object', properties: {} },
      'inputSchema.additionalProperties: must be false (arguments are checked exactly)',
    ],
    [
      '$ref',
      root({ a: { $ref: '#/$defs/x' } }),
      'inputSchema.properties.a.type: is required (one of: string, integer, number, boolean, array)',
    ],
    [
      '$ref beside a type',
      root({ a: { type: 'string', maxLength: 3, $ref: '#/x' } }),
      'inputSchema.properties.a.$ref: $ref is not supported (write the property out)',
    ],
    [
      'oneOf',
      root({ a: { type: 'string', maxLength: 3, oneOf: [] } }),
      'inputSchema.properties.a.oneOf: oneOf is not supported',
    ],
    [
      'a nested object',
      root({ a: { type: 'object', properties: {} } }),
      'inputSchema.properties.a.type: nested objects are not supported (one of: string, integer, number, boolean, array)',
    ],
    [
      'an unbounded string',
      root({ a: { type: 'string' } }),
      'inputSchema.properties.a.maxLength: is required for a string without an enum (an integer from 0 to 1000000)',
    ],
    [
      'an unbounded array',
      root({ a: { type: 'array', items: { type: 'string', maxLength: 3 } } }),
      'inputSchema.properties.a.maxItems: is required for an array (an integer from 0 to 1000)',
    ],
    [
      'an array of objects',
      root({ a: { type: 'array', maxItems: 2, items: { type: 'object' } } }),
      'inputSchema.properties.a.items.type: nested objects are not supported (one of: string, integer, number, boolean)',
    ],
    [
      'an array of arrays',
      root({ a: { type: 'array', maxItems: 2, items: { type: 'array' } } }),
      'inputSchema.properties.a.items.type: arrays of arrays are not supported (one of: string, integer, number, boolean)',
    ],
    [
      'a list of types',
      root({ a: { type: ['string', 'null'], maxLength: 3 } }),
      'inputSchema.properties.a.type: a list of types is not supported (one of: string, integer, number, boolean, array)',
    ],
    [
      'format',
      root({ a: { type: 'string', maxLength: 30, format: 'email' } }),
      'inputSchema.properties.a.format: format is not supported (use pattern)',
    ],
    [
      'a keyword of another type',
      root({ a: { type: 'integer', maxLength: 3 } }),
      'inputSchema.properties.a.maxLength: "maxLength" is not supported on an integer (allowed: type, description, default, minimum, maximum)',
    ],
    [
      'a pattern that does not compile',
      root({ a: { type: 'string', maxLength: 3, pattern: '(' } }),
      'inputSchema.properties.a.pattern: must be an ECMA-262 regular expression RE2 can run (no lookaround, no backreferences), at most 1000 characters (not an ECMA-262 regular expression (Invalid regular expression: /(/u: Unterminated group))',
    ],
    [
      'a default outside the schema',
      root({ a: { type: 'integer', maximum: 3, default: 9 } }),
      'inputSchema.properties.a.default: does not fit the property (Too big: expected number to be <=3)',
    ],
    [
      'a required name that is not a property',
      root({ a: { type: 'boolean' } }, ['b']),
      'inputSchema.required: names "b", which is not in properties',
    ],
    [
      'a property name a template cannot name',
      root({ 'a-b': { type: 'boolean' } }),
      'inputSchema.properties.a-b: a property name must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$ (templates name it as {name})',
    ],
    ['a root keyword outside the set', { ...root({}), $defs: {} }, 'inputSchema.$defs: $defs is not supported'],
  ])('%s', (_what, json, problem) => {
    expect(problemsOf(json)).toContain(problem);
  });

  it('lists every problem of a schema at once', () => {
    const problems = problemsOf(
      root({ a: { type: 'string' }, b: { type: 'object' }, c: { type: 'string', maxLength: 2, anyOf: [] } }, ['z']),
    );
    expect(problems).toEqual([
      'inputSchema.required: names "z", which is not in properties',
      'inputSchema.properties.a.maxLength: is required for a string without an enum (an integer from 0 to 1000000)',
      'inputSchema.properties.b.type: nested objects are not supported (one of: string, integer, number, boolean, array)',
      'inputSchema.properties.c.anyOf: anyOf is not supported',
    ]);
  });
});

// An operator's pattern (TOOLS_FILE, an OpenAPI import) runs on every MCP caller's input. On V8's
// backtracking engine ^(a+)+$ took seconds for a few dozen characters, on the thread every user shares.
describe('a backtracking pattern in a declared tool', () => {
  const word = (extra: Record<string, unknown>) =>
    schemaOf(root({ word: { type: 'string', maxLength: 200, ...extra } }, ['word']));

  it('runs in time linear in the input, and refuses what does not match', () => {
    const schema = word({ pattern: '^(a+)+$' });
    const started = performance.now();
    const parsed = schema.safeParse({ word: `${'a'.repeat(26)}!` });
    const elapsedMs = performance.now() - started;
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toBe('Invalid string: must match pattern ^(a+)+$');
    expect(elapsedMs).toBeLessThan(250);
    expect(schema.parse({ word: 'aaaa' })).toEqual({ word: 'aaaa' });
  });

  it('checks the length before the pattern: a string over maxLength is never searched', () => {
    const parsed = schemaOf(root({ word: { type: 'string', maxLength: 3, pattern: '^b+$' } })).safeParse({
      word: 'aaaa',
    });
    expect(parsed.error?.issues.map((i) => i.code)).toEqual(['too_big']);
  });

  it('refuses at configuration a pattern RE2 cannot run (lookaround, backreferences), saying why', () => {
    const [problem] = problemsOf(root({ word: { type: 'string', maxLength: 3, pattern: '(?=a)a' } }));
    expect(problem).toMatch(
      /^inputSchema\.properties\.word\.pattern: must be an ECMA-262 regular expression RE2 can run/,
    );
    expect(problem).toContain('RE2 cannot run it');
  });

  it('still shows tools/list the pattern', () => {
    expect(z.toJSONSchema(word({ pattern: '^a+$' }), { target: 'draft-2020-12' })).toMatchObject({
      properties: { word: { type: 'string', maxLength: 200, pattern: '^a+$' } },
    });
  });
});
