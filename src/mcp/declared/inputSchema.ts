import { z } from 'zod';
import { patternProblem, SAFE_PATTERN_RULE, safePattern } from '../../security/safePattern.js';

// A declared tool's inputSchema: a small, closed subset of JSON Schema
// (draft 2020-12) turned into the zod object the tool runs on. Every value a
// model can send is bounded (strings by maxLength or enum, arrays by
// maxItems) and flat (no nested objects), under a name a template can use.
// Anything outside the subset is a problem naming its path, never ignored.

export type PropertyKind = 'string' | 'integer' | 'number' | 'boolean' | 'array';

export interface InputProperty {
  kind: PropertyKind;
  /** In every parsed input: required, or given a default. */
  alwaysPresent: boolean;
}

/** A check a property gets for where its value goes (a path segment, a header), run when arguments are parsed. */
export type ValueCheck = (value: unknown, ctx: z.RefinementCtx) => void;

export interface TranslatedInput {
  schema: z.ZodObject;
  properties: ReadonlyMap<string, InputProperty>;
}

export const PROPERTY_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_PROPERTIES = 50;
const MAX_LENGTH = 1_000_000;
const MAX_ITEMS = 1_000;
const PRIMITIVES = ['string', 'integer', 'number', 'boolean'] as const;

const ROOT_KEYS = new Set(['type', 'properties', 'required', 'additionalProperties', 'description']);
const KEYS: Record<PropertyKind, ReadonlySet<string>> = {
  string: new Set(['type', 'description', 'default', 'maxLength', 'minLength', 'pattern', 'enum']),
  integer: new Set(['type', 'description', 'default', 'minimum', 'maximum']),
  number: new Set(['type', 'description', 'default', 'minimum', 'maximum']),
  boolean: new Set(['type', 'description', 'default']),
  array: new Set(['type', 'description', 'default', 'items', 'maxItems', 'minItems']),
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isCount = (value: unknown, max: number): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;

/**
 * The restricted schema as a strict zod object, or the problems, each naming
 * its path under `at`. `checkFor` adds the checks a property's uses need; a
 * default must pass them too.
 */
export function translateInputSchema(
  json: unknown,
  checkFor: (name: string) => ValueCheck | undefined = () => undefined,
  at = 'inputSchema',
): { input: TranslatedInput; problems: [] } | { input: undefined; problems: string[] } {
  const problems: string[] = [];
  if (!isRecord(json))
    return { input: undefined, problems: [`${at}: must be a JSON Schema object ({"type": "object", …})`] };
  for (const key of Object.keys(json)) if (!ROOT_KEYS.has(key)) problems.push(`${at}.${key}: ${unsupported(key)}`);
  if (json['type'] !== 'object') problems.push(`${at}.type: must be "object"`);
  if (json['additionalProperties'] !== false)
    problems.push(`${at}.additionalProperties: must be false (arguments are checked exactly)`);
  if (json['description'] !== undefined && typeof json['description'] !== 'string')
    problems.push(`${at}.description: must be a string`);
  const declared = json['properties'] ?? {};
  if (!isRecord(declared)) problems.push(`${at}.properties: must be an object of property schemas`);
  const props = isRecord(declared) ? declared : {};
  if (Object.keys(props).length > MAX_PROPERTIES)
    problems.push(`${at}.properties: has more than ${MAX_PROPERTIES} properties`);
  const required = json['required'] ?? [];
  const names = Array.isArray(required) && required.every((r) => typeof r === 'string') ? new Set(required) : undefined;
  if (!names || names.size !== (required as unknown[]).length)
    problems.push(`${at}.required: must be a list of distinct property names`);
  for (const name of names ?? [])
    if (!Object.hasOwn(props, name))
      problems.push(`${at}.required: names ${JSON.stringify(name)}, which is not in properties`);

  const shape: Record<string, z.ZodType> = {};
  const properties = new Map<string, InputProperty>();
  for (const [name, schema] of Object.entries(props)) {
    const path = `${at}.properties.${name}`;
    if (!PROPERTY_NAME.test(name)) {
      problems.push(`${path}: a property name must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$ (templates name it as {name})`);
      continue;
    }
    const built = propertySchema(schema, path, problems, checkFor(name));
    if (!built) continue;
    const isRequired = names?.has(name) ?? false;
    shape[name] = isRequired || built.hasDefault ? built.schema : built.schema.optional();
    properties.set(name, { kind: built.kind, alwaysPresent: isRequired || built.hasDefault });
  }
  return problems.length > 0
    ? { input: undefined, problems }
    : { input: { schema: z.strictObject(shape), properties }, problems: [] };
}

function propertySchema(
  json: unknown,
  path: string,
  problems: string[],
  check: ValueCheck | undefined,
): { kind: PropertyKind; schema: z.ZodType; hasDefault: boolean } | undefined {
  const kind = kindOf(json, path, problems, false);
  if (!kind || !isRecord(json)) return undefined;
  const before = problems.length;
  for (const key of Object.keys(json))
    if (!KEYS[kind].has(key)) problems.push(`${path}.${key}: ${unsupported(key, kind)}`);
  if (json['description'] !== undefined && typeof json['description'] !== 'string')
    problems.push(`${path}.description: must be a string`);
  const base = kind === 'array' ? arraySchema(json, path, problems) : primitiveSchema(kind, json, path, problems);
  if (!base || problems.length > before) return undefined;
  let schema: z.ZodType = check ? base.superRefine(check) : base;
  if (typeof json['description'] === 'string') schema = schema.describe(json['description']);
  if (json['default'] === undefined) return { kind, schema, hasDefault: false };
  const checked = schema.safeParse(json['default']);
  if (!checked.success) {
    problems.push(`${path}.default: does not fit the property (${checked.error.issues[0]?.message ?? 'invalid'})`);
    return undefined;
  }
  return { kind, schema: schema.default(checked.data as never), hasDefault: true };
}

function kindOf(json: unknown, path: string, problems: string[], item: boolean): PropertyKind | undefined {
  const allowed: readonly string[] = item ? PRIMITIVES : [...PRIMITIVES, 'array'];
  const kind = isRecord(json) ? json['type'] : undefined;
  if (typeof kind === 'string' && allowed.includes(kind)) return kind as PropertyKind;
  if (!isRecord(json)) problems.push(`${path}: must be a schema object with a "type"`);
  else {
    const why =
      kind === 'object'
        ? 'nested objects are not supported'
        : kind === 'array'
          ? 'arrays of arrays are not supported'
          : Array.isArray(kind)
            ? 'a list of types is not supported'
            : kind === undefined
              ? 'is required'
              : `${JSON.stringify(kind)} is not supported`;
    problems.push(`${path}.type: ${why} (one of: ${allowed.join(', ')})`);
  }
  return undefined;
}

function primitiveSchema(
  kind: PropertyKind,
  json: Record<string, unknown>,
  path: string,
  problems: string[],
): z.ZodType | undefined {
  if (kind === 'boolean') return z.boolean();
  if (kind === 'string') return stringSchema(json, path, problems);
  let schema = kind === 'integer' ? z.number().int() : z.number();
  for (const bound of ['minimum', 'maximum'] as const) {
    const value = json[bound];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) problems.push(`${path}.${bound}: must be a number`);
    else schema = bound === 'minimum' ? schema.min(value) : schema.max(value);
  }
  if (typeof json['minimum'] === 'number' && typeof json['maximum'] === 'number' && json['minimum'] > json['maximum'])
    problems.push(`${path}: minimum is above maximum`);
  return schema;
}

function stringSchema(json: Record<string, unknown>, path: string, problems: string[]): z.ZodType | undefined {
  const { maxLength, minLength, pattern } = json;
  const values = json['enum'];
  if (values !== undefined) {
    if (
      !Array.isArray(values) ||
      values.length === 0 ||
      !values.every((v) => typeof v === 'string' && v.length <= 1_000) ||
      new Set(values).size !== values.length
    ) {
      problems.push(`${path}.enum: must be a non-empty list of distinct strings`);
      return undefined;
    }
    if (maxLength !== undefined || minLength !== undefined || pattern !== undefined)
      problems.push(`${path}: an enum takes no maxLength, minLength or pattern (its values bound it)`);
    return z.enum(values as [string, ...string[]]);
  }
  // No unbounded strings: every argument a model sends has a stated limit, so no call carries megabytes.
  if (!isCount(maxLength, MAX_LENGTH))
    problems.push(`${path}.maxLength: is required for a string without an enum (an integer from 0 to ${MAX_LENGTH})`);
  if (minLength !== undefined && !isCount(minLength, MAX_LENGTH))
    problems.push(`${path}.minLength: must be a non-negative integer`);
  const why = typeof pattern === 'string' ? patternProblem(pattern) : 'not a string';
  if (pattern !== undefined && why !== undefined)
    problems.push(`${path}.pattern: must be ${SAFE_PATTERN_RULE} (${why})`);
  if (!isCount(maxLength, MAX_LENGTH)) return undefined;
  const min = isCount(minLength, MAX_LENGTH) ? minLength : 0;
  if (min > maxLength) problems.push(`${path}: minLength is above maxLength`);
  const schema = z.string().min(min).max(maxLength);
  return typeof pattern === 'string' && why === undefined ? withPattern(schema, pattern, min, maxLength) : schema;
}

/**
 * The pattern run on RE2 (src/security/safePattern.ts), and only on a string within its lengths:
 * zod runs a check after one that failed, and the length is the cheap one. tools/list still shows it.
 */
function withPattern(schema: z.ZodString, pattern: string, min: number, max: number): z.ZodType {
  const re = safePattern(pattern);
  return schema
    .superRefine((value, ctx) => {
      if (value.length >= min && value.length <= max && !re.test(value))
        ctx.addIssue({ code: 'custom', message: `Invalid string: must match pattern ${pattern}` });
    })
    .meta({ pattern });
}

function arraySchema(json: Record<string, unknown>, path: string, problems: string[]): z.ZodType | undefined {
  const items = json['items'];
  if (items === undefined) problems.push(`${path}.items: is required (a string, integer, number or boolean schema)`);
  const itemKind = items === undefined ? undefined : kindOf(items, `${path}.items`, problems, true);
  let item: z.ZodType | undefined;
  if (itemKind && isRecord(items)) {
    for (const key of Object.keys(items))
      if (!KEYS[itemKind].has(key) || key === 'default')
        problems.push(`${path}.items.${key}: ${unsupported(key, itemKind)}`);
    item = primitiveSchema(itemKind, items, `${path}.items`, problems);
  }
  const { maxItems, minItems } = json;
  if (!isCount(maxItems, MAX_ITEMS))
    problems.push(`${path}.maxItems: is required for an array (an integer from 0 to ${MAX_ITEMS})`);
  if (minItems !== undefined && !isCount(minItems, MAX_ITEMS))
    problems.push(`${path}.minItems: must be a non-negative integer`);
  if (!item || !isCount(maxItems, MAX_ITEMS)) return undefined;
  if (isCount(minItems, MAX_ITEMS) && minItems > maxItems) problems.push(`${path}: minItems is above maxItems`);
  return isCount(minItems, MAX_ITEMS) ? z.array(item).min(minItems).max(maxItems) : z.array(item).max(maxItems);
}

const NAMED: Record<string, string> = {
  $ref: '$ref is not supported (write the property out)',
  $defs: '$defs is not supported',
  oneOf: 'oneOf is not supported',
  anyOf: 'anyOf is not supported',
  allOf: 'allOf is not supported',
  not: 'not is not supported',
  properties: 'nested objects are not supported',
  format: 'format is not supported (use pattern)',
};

function unsupported(key: string, kind?: PropertyKind): string {
  return (
    NAMED[key] ??
    `${JSON.stringify(key)} is not supported${kind ? ` on ${kind === 'integer' || kind === 'array' ? 'an' : 'a'} ${kind}` : ''} (allowed: ${[...(kind ? KEYS[kind] : ROOT_KEYS)].join(', ')})`
  );
}
